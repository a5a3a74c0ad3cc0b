package postgres_test

import (
	"errors"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"testing"
)

// tcpProxy forwards TCP connections to one address until Blackhole is
// called; from then on it forwards nothing in either direction and reads
// nothing more, yet closes no socket: to both ends the peer looks alive (its
// kernel still acknowledges what fits in the buffers) and silent, as a host
// that lost power or was cut off behind a firewall dropping packets looks
// once the buffers are full. Close cuts every connection.
type tcpProxy struct {
	ln      net.Listener
	target  string
	holed   chan struct{} // closed by Blackhole
	done    chan struct{} // closed by Close
	holeOne sync.Once
	mu      sync.Mutex
	conns   []net.Conn
	wg      sync.WaitGroup
}

// startProxy listens on a free loopback port, forwards to dsn's host and
// port, and returns the proxy and dsn rewritten to go through it. The
// proxy is closed on cleanup.
func startProxy(t *testing.T, dsn string) (*tcpProxy, string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: u.Host, holed: make(chan struct{}), done: make(chan struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(p.Close)
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	return p, u.String()
}

func (p *tcpProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(client, server) {
			return
		}
		p.wg.Go(func() { p.pipe(server, client) })
		p.wg.Go(func() { p.pipe(client, server) })
	}
}

// track records the connections for Close, or closes them if the proxy is
// closed already.
func (p *tcpProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	default:
		p.conns = append(p.conns, cs...)
		return true
	}
}

// pipe copies src to dst until either breaks. Once the proxy is
// blackholed, what it reads is dropped and it stops reading, so the
// sender's data piles up unacknowledged in the buffers, until Close.
func (p *tcpProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-p.holed:
			<-p.done
			return
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				_ = dst.(*net.TCPConn).CloseWrite()
			}
			return
		}
	}
}

// Blackhole stops all forwarding; the sockets stay open.
func (p *tcpProxy) Blackhole() { p.holeOne.Do(func() { close(p.holed) }) }

// Close closes the listener and every connection, and waits for the
// proxy's goroutines. Safe to call twice.
func (p *tcpProxy) Close() {
	p.mu.Lock()
	select {
	case <-p.done:
		p.mu.Unlock()
		return
	default:
	}
	close(p.done)
	_ = p.ln.Close()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

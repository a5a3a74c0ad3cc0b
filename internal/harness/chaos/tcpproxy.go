package chaos

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// relay stands between one worker and its coordinator, and the nemesis
// switches its faults: a Proxy (HTTP, Consul) or a TCPProxy (etcd's gRPC).
type relay interface {
	Addr() string
	Set(m Mode, delay time.Duration)
	Close() error
}

// TCPProxy relays TCP connections between one worker and one etcd member.
// ModePartition stops relaying: every connection stays open, and what is
// sent either way waits, as packets do across a cut network, until the
// mode changes; new connections are held the same way. So the worker's
// calls get no answer and its connection goes silent rather than closed
// (only the client's keep-alive tells). The other modes relay.
type TCPProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool // open connections, both sides
	healed chan struct{}     // closed when a partition ends
	closed bool
}

// NewTCPProxy listens on a free loopback port and relays to target
// (host:port).
func NewTCPProxy(target string) (*TCPProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: proxy for %s: %w", target, err)
	}
	p := &TCPProxy{ln: ln, target: target, conns: map[net.Conn]bool{}, healed: make(chan struct{})}
	close(p.healed)
	go p.serve()
	return p, nil
}

// Addr is the address the worker is given instead of the member's.
func (p *TCPProxy) Addr() string { return p.ln.Addr().String() }

// Set switches the mode: only ModePartition differs from relaying.
func (p *TCPProxy) Set(m Mode, _ time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch cut := m == ModePartition; {
	case cut && !p.cut:
		p.cut, p.healed = true, make(chan struct{})
	case !cut && p.cut:
		p.cut = false
		close(p.healed)
	}
}

// Close stops the proxy and closes every connection.
func (p *TCPProxy) Close() error {
	p.Set(ModePass, 0)
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	return p.ln.Close()
}

// track adds c to the open connections, false when the proxy is closed.
func (p *TCPProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *TCPProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *TCPProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

// handle relays one connection, holding it while a partition lasts.
func (p *TCPProxy) handle(c net.Conn) {
	if !p.track(c) {
		_ = c.Close()
		return
	}
	defer p.untrack(c)
	if !p.waitHealed(c) {
		return
	}
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	if !p.track(up) {
		_ = up.Close()
		return
	}
	defer p.untrack(up)
	done := make(chan struct{}, 2)
	go func() { p.relay(up, c); done <- struct{}{} }()
	go func() { p.relay(c, up); done <- struct{}{} }()
	<-done // either side ended (or the proxy closed both)
}

// relay copies from src to dst, each chunk read waiting, before it is
// written, for any partition to heal.
func (p *TCPProxy) relay(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitHealed(dst) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			_ = dst.Close()
			return
		}
	}
}

// waitHealed waits while a partition lasts; false when the proxy closed
// meanwhile (c is closed then).
func (p *TCPProxy) waitHealed(c net.Conn) bool {
	p.mu.Lock()
	cut, healed, closed := p.cut, p.healed, p.closed
	p.mu.Unlock()
	if cut {
		<-healed
		p.mu.Lock()
		closed = p.closed
		p.mu.Unlock()
	}
	if closed {
		_ = c.Close()
	}
	return !closed
}

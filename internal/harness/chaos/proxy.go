package chaos

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Mode is what a Proxy does to the requests it relays.
type Mode int

// The proxy's modes.
const (
	// ModePass relays every request.
	ModePass Mode = iota
	// ModePartition answers nothing: requests (new ones and those in flight,
	// long polls included) hang until the client gives up, and when the
	// partition heals the connections they hung on are cut, as a network
	// that dropped every packet would leave them.
	ModePartition
	// ModeSlowRenewals delays each renewal (see isRenewal) by the proxy's
	// delay before relaying it; everything else passes.
	ModeSlowRenewals
	// ModeFailRenewals answers each renewal with HTTP 500; everything else
	// passes.
	ModeFailRenewals
)

func (m Mode) String() string {
	switch m {
	case ModePass:
		return "pass"
	case ModePartition:
		return "partition"
	case ModeSlowRenewals:
		return "slow-renewals"
	case ModeFailRenewals:
		return "failing-renewals"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Proxy is an HTTP proxy between one worker and one Consul agent, whose
// faults the nemesis switches. The zero value is not usable; use NewProxy.
type Proxy struct {
	ln  net.Listener
	srv *http.Server
	rp  *httputil.ReverseProxy

	mu     sync.Mutex
	mode   Mode
	delay  time.Duration
	healed chan struct{}      // closed when a partition ends
	cut    context.Context    // done when a partition starts
	cutNow context.CancelFunc // ends cut
}

// NewProxy listens on a free loopback port and relays to the agent at
// target (host:port).
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: proxy for %s: %w", target, err)
	}
	p := &Proxy{ln: ln, healed: make(chan struct{})}
	p.rp = p.relayTo(target)
	close(p.healed)
	p.cut, p.cutNow = context.WithCancel(context.Background())
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, ErrorLog: discardLog}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// relayTo is the reverse proxy to the agent at target.
func (p *Proxy) relayTo(target string) *httputil.ReverseProxy {
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	// A connection per request to the agent: a cut request takes only its
	// own connection with it, and none is left pooled to a killed agent.
	rp.Transport = &http.Transport{DisableKeepAlives: true}
	rp.ErrorHandler = p.upstreamFailed
	return rp
}

// Retarget relays every later request to the agent at target, and cuts
// the requests in flight to the old one (long polls too): what the
// workers see when the Consul at their address is replaced by another,
// rebuilt empty or restored from a snapshot.
func (p *Proxy) Retarget(target string) {
	rp := p.relayTo(target)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rp = rp
	if p.mode != ModePartition {
		p.cutNow()
		p.cut, p.cutNow = context.WithCancel(context.Background())
	}
}

// Addr is the address workers are given instead of the agent's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set switches the mode; delay is ModeSlowRenewals' latency.
func (p *Proxy) Set(m Mode, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.mode
	p.mode, p.delay = m, delay
	switch {
	case m == ModePartition && was != ModePartition:
		p.healed = make(chan struct{})
		p.cutNow() // cut the requests in flight, long polls too
	case m != ModePartition && was == ModePartition:
		close(p.healed)
		p.cut, p.cutNow = context.WithCancel(context.Background())
	}
}

// Close stops the proxy and cuts every request in flight.
func (p *Proxy) Close() error {
	p.Set(ModePass, 0)
	p.mu.Lock()
	p.cutNow()
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil {
		return p.srv.Close()
	}
	return nil
}

func (p *Proxy) state() (Mode, time.Duration, chan struct{}, context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.delay, p.healed, p.cut
}

func (p *Proxy) relay() *httputil.ReverseProxy {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rp
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mode, delay, healed, cut := p.state()
	switch {
	case mode == ModePartition:
		blackhole(r.Context(), healed)
	case mode == ModeFailRenewals && isRenewal(r):
		http.Error(w, "chaos: renewal refused", http.StatusInternalServerError)
		return
	case mode == ModeSlowRenewals && isRenewal(r):
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	// A partition that starts while the request is relayed cuts it.
	ctx, cancel := context.WithCancel(context.WithValue(r.Context(), clientKey{}, r.Context()))
	defer cancel()
	stop := context.AfterFunc(cut, cancel)
	defer stop()
	p.relay().ServeHTTP(w, r.WithContext(ctx))
}

// upstreamFailed: a request cut by a partition hangs like the others; one
// the agent failed (it was killed) loses its connection, the nearest an
// HTTP proxy gets to the refused connection a dead agent gives.
func (p *Proxy) upstreamFailed(_ http.ResponseWriter, r *http.Request, _ error) {
	if mode, _, healed, _ := p.state(); mode == ModePartition {
		// r is the relayed request, its context cut; wait on the client's.
		client, _ := r.Context().Value(clientKey{}).(context.Context)
		if client == nil {
			client = r.Context()
		}
		blackhole(client, healed)
	}
	panic(http.ErrAbortHandler)
}

// clientKey holds, in a relayed request's context, the client's own.
type clientKey struct{}

// blackhole waits until the client gives up or the partition heals, then
// drops the connection without an answer.
func blackhole(client context.Context, healed chan struct{}) {
	select {
	case <-client.Done():
	case <-healed:
	}
	panic(http.ErrAbortHandler)
}

// isRenewal: the calls a worker's renewal makes, in check liveness (a pass
// of its TTL check, then a read of its session) and in TTL liveness (a
// session renew).
func isRenewal(r *http.Request) bool {
	switch {
	case r.Method == http.MethodPut && (strings.HasPrefix(r.URL.Path, "/v1/agent/check/update/") ||
		strings.HasPrefix(r.URL.Path, "/v1/agent/check/pass/") ||
		strings.HasPrefix(r.URL.Path, "/v1/session/renew/")):
		return true
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/session/info/"):
		return true
	}
	return false
}

// discardLog silences the server's log of the connections it aborts.
var discardLog = log.New(io.Discard, "", 0)

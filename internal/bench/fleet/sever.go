package fleet

import (
	"net/http"

	"github.com/shardlease/shardlease/internal/harness/apilock"
)

// severable is an in-process worker's HTTP transport: it counts what
// reaches the agent, and it can be cut to make the worker look kill -9'd
// to Consul (apilock.Severable): its session is neither renewed nor
// destroyed, so Consul invalidates it exactly as it would a kill -9'd
// process's, when its TTL or health check runs out.
type severable struct {
	*apilock.Severable
	base http.RoundTripper
	// requests counts what reaches the agent (coordinator-load, cold-start).
	requests requestTap
}

func newSeverable(base http.RoundTripper) *severable {
	s := &severable{base: base}
	s.Severable = apilock.NewSeverable(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return s.requests.roundTrip(s.base, req)
	}))
	return s
}

// wrap suits consul.Config.WrapTransport.
func (s *severable) wrap(base http.RoundTripper) http.RoundTripper {
	s.base = base
	return s
}

// sever cuts the transport for good.
func (s *severable) sever() { s.Sever() }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

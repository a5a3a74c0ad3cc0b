package consul

import (
	"maps"
	"net/http"
	"strings"
	"sync"
)

// RequestCounter counts the HTTP requests a coordinator sends, in total and
// per endpoint ("PUT /v1/txn", "GET /v1/kv", "PUT /v1/session/renew",
// "PUT /v1/agent/check/update"; keys and IDs cut off). Use its Wrap as
// Config.WrapTransport, one counter per worker to measure requests per
// worker. Safe for concurrent use; the zero value is ready.
type RequestCounter struct {
	mu     sync.Mutex
	total  int64
	counts map[string]int64
}

// Wrap returns next with counting in front of it.
func (rc *RequestCounter) Wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		rc.add(r.Method + " " + endpoint(r.URL.Path))
		return next.RoundTrip(r)
	})
}

func (rc *RequestCounter) add(ep string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.counts == nil {
		rc.counts = make(map[string]int64)
	}
	rc.total++
	rc.counts[ep]++
}

// Total returns the number of requests sent so far.
func (rc *RequestCounter) Total() int64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.total
}

// Counts returns a copy of the per-endpoint counts.
func (rc *RequestCounter) Counts() map[string]int64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return maps.Clone(rc.counts)
}

// Reset sets every count back to zero.
func (rc *RequestCounter) Reset() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.total, rc.counts = 0, nil
}

// endpoint cuts a request path down to its API endpoint: the KV path keeps
// "/v1/kv", a session call keeps its verb ("/v1/session/renew"), an agent
// check call its verb ("/v1/agent/check/update").
func endpoint(path string) string {
	parts := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 5)
	keep := 3
	switch {
	case len(parts) >= 2 && (parts[1] == "kv" || parts[1] == "txn"):
		keep = 2
	case len(parts) >= 3 && parts[1] == "agent" && parts[2] == "check":
		keep = 4
	}
	if len(parts) > keep {
		parts = parts[:keep]
	}
	return "/" + strings.Join(parts, "/")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

package consul

import (
	"net/http"
	"strings"

	"github.com/shardlease/shardlease/internal/reqcount"
)

// RequestCounter counts the HTTP requests a coordinator sends, in total and
// per endpoint ("PUT /v1/txn", "GET /v1/kv", "PUT /v1/session/renew",
// "PUT /v1/agent/check/update"; keys and IDs cut off). Use its Wrap as
// Config.WrapTransport, one counter per worker to measure requests per
// worker. Safe for concurrent use; the zero value is ready.
type RequestCounter struct{ reqcount.Counter }

// Wrap returns next with counting in front of it.
func (rc *RequestCounter) Wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		rc.Add(r.Method + " " + endpoint(r.URL.Path))
		return next.RoundTrip(r)
	})
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

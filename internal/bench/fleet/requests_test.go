package fleet

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRequestTapCountsAcquires: every request is counted by endpoint, and
// a KV acquire's answer (true or false) is counted and still reaches the
// caller.
func TestRequestTapCountsAcquires(t *testing.T) {
	answer := "true"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	var tap requestTap
	client := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		return tap.roundTrip(http.DefaultTransport, r)
	})}
	do := func(method, path string) string {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(""))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := do(http.MethodPut, "/v1/kv/p/a?acquire=s1"); got != "true" {
		t.Errorf("the caller read %q, want true", got)
	}
	answer = "false"
	do(http.MethodPut, "/v1/kv/p/b?acquire=s1")
	do(http.MethodPut, "/v1/kv/p/c?release=s1") // not an acquire
	do(http.MethodGet, "/v1/kv/p/a")
	if a, r := tap.acquired.Load(), tap.refused.Load(); a != 1 || r != 1 {
		t.Errorf("acquired %d, refused %d; want 1 and 1", a, r)
	}
	if got := tap.Counts(); got["PUT /v1/kv"] != 3 || got["GET /v1/kv"] != 1 || tap.Total() != 4 {
		t.Errorf("counts %v, total %d; want 3 PUT and 1 GET", got, tap.Total())
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

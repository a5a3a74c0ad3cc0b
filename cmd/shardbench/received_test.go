package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRequestTapCountsReceivedBytes: a response counts its head and every
// byte of its body the caller reads, once, also when the tap reads a KV
// acquire's answer itself and hands the caller a copy.
func TestRequestTapCountsReceivedBytes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Consul-Index", "42")
		io.WriteString(w, r.URL.Query().Get("body"))
	}))
	defer srv.Close()
	var tap requestTap
	client := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		return tap.roundTrip(http.DefaultTransport, r)
	})}
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/kv/p", strings.Repeat("x", 10000)},
		{http.MethodPut, "/v1/kv/p/a?acquire=s1", "true"},
	} {
		before := tap.received.load()
		sep := "?"
		if strings.Contains(tc.path, "?") {
			sep = "&"
		}
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path+sep+"body="+tc.body, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// The head: a status line, Content-Length, Content-Type, Date and
		// X-Consul-Index, about a hundred bytes.
		head := tap.received.load() - before - int64(len(got))
		if string(got) != tc.body || head < 80 || head > 200 {
			t.Errorf("%s %s: read %d bytes, counted %d for the head; want %d and about 120",
				tc.method, tc.path, len(got), head, len(tc.body))
		}
	}
}

package fleet

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestRequestTapCountsReceivedBytes: a response counts its head and every
// byte of its body the caller reads, once, also when the tap reads a KV
// acquire's answer itself and hands the caller a copy.
func TestRequestTapCountsReceivedBytes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := r.URL.Query().Get("body")
		w.Header().Set("X-Consul-Index", "42")
		w.Header().Set("Content-Length", strconv.Itoa(len(body))) // not chunked: the heads differ only in its digits
		io.WriteString(w, body)
	}))
	defer srv.Close()
	var tap requestTap
	client := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		return tap.roundTrip(http.DefaultTransport, r)
	})}
	var heads []int64
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
		if string(got) != tc.body {
			t.Fatalf("%s %s: read %q, want %q", tc.method, tc.path, got, tc.body)
		}
		// The head: a status line, Content-Length, Content-Type, Date and
		// X-Consul-Index, about a hundred bytes.
		head := tap.received.load() - before - int64(len(got))
		if head < 80 || head > 200 {
			t.Errorf("%s %s: counted %d bytes for the head, want about 120", tc.method, tc.path, head)
		}
		heads = append(heads, head)
	}
	// The two heads differ only in Content-Length's digits ("10000" and
	// "4"): a body counted twice, or not at all, shows as 4 bytes more or
	// less on the acquire, whose answer the tap reads itself.
	if heads[1] != heads[0]-4 {
		t.Errorf("the acquire's head counted %d bytes, want %d (the GET's %d less Content-Length's 4 digits more)", heads[1], heads[0]-4, heads[0])
	}
}

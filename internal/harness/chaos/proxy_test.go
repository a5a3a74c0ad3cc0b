package chaos

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// upstream stands in for a Consul agent: renewals answer at once, a long
// poll (/v1/kv/poll) waits until its client goes away.
func upstream(t *testing.T) (*httptest.Server, *atomic.Int32, chan struct{}) {
	var cut atomic.Int32
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/kv/poll" {
			arrived <- struct{}{}
			select {
			case <-r.Context().Done():
				cut.Add(1)
			case <-time.After(30 * time.Second):
			}
			return
		}
		io.WriteString(w, "ok "+r.Method+" "+r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv, &cut, arrived
}

func call(t *testing.T, px *Proxy, method, path string, timeout time.Duration) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, "http://"+px.Addr()+path, nil)
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func TestProxyModes(t *testing.T) {
	srv, cut, arrived := upstream(t)
	px, err := NewProxy(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	const renew, read, info = "/v1/agent/check/update/shardlease-session-w1-abc", "/v1/kv/x", "/v1/session/info/123"

	if code, err := call(t, px, http.MethodPut, renew, 5*time.Second); err != nil || code != 200 {
		t.Fatalf("pass: renewal %d, %v", code, err)
	}

	px.Set(ModeFailRenewals, 0)
	if code, err := call(t, px, http.MethodPut, renew, 5*time.Second); err != nil || code != 500 {
		t.Errorf("failing renewals: renewal %d, %v; want 500", code, err)
	}
	if code, err := call(t, px, http.MethodGet, info, 5*time.Second); err != nil || code != 500 {
		t.Errorf("failing renewals: session read %d, %v; want 500", code, err)
	}
	if code, err := call(t, px, http.MethodGet, read, 5*time.Second); err != nil || code != 200 {
		t.Errorf("failing renewals: a KV read %d, %v; want 200", code, err)
	}

	px.Set(ModeSlowRenewals, 300*time.Millisecond)
	began := time.Now()
	if code, err := call(t, px, http.MethodPut, renew, 5*time.Second); err != nil || code != 200 {
		t.Errorf("slow renewals: renewal %d, %v", code, err)
	}
	if took := time.Since(began); took < 300*time.Millisecond {
		t.Errorf("slow renewals: a renewal took %v, below the 300ms delay", took)
	}

	// A partition cuts the long poll in flight and answers nothing new.
	px.Set(ModePass, 0)
	polled := make(chan error, 1)
	go func() { _, err := call(t, px, http.MethodGet, "/v1/kv/poll", 20*time.Second); polled <- err }()
	<-arrived
	px.Set(ModePartition, 0)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && cut.Load() == 0; {
		time.Sleep(10 * time.Millisecond)
	}
	if cut.Load() == 0 {
		t.Fatal("the partition did not cut the long poll at the upstream")
	}
	if _, err := call(t, px, http.MethodGet, read, 300*time.Millisecond); err == nil {
		t.Error("a request through the partition was answered")
	}
	select {
	case err := <-polled:
		t.Fatalf("the cut long poll was answered during the partition: %v", err)
	default:
	}
	px.Set(ModePass, 0)
	if err := <-polled; err == nil {
		t.Error("the long poll cut by the partition got an answer after it healed; want a dropped connection")
	}
	if code, err := call(t, px, http.MethodGet, read, 5*time.Second); err != nil || code != 200 {
		t.Errorf("after the partition: %d, %v", code, err)
	}
}

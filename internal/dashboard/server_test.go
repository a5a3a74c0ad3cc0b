package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/dashboard"
	"github.com/shardlease/shardlease/internal/fleetview"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve starts a dashboard on a loopback port, stopped on cleanup.
func serve(t *testing.T, o dashboard.Options) string {
	t.Helper()
	srv, err := dashboard.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// smallFleet is a coordinator with two members holding shards 0-2 of 4,
// set up by hand (no workers), and a session per member.
func smallFleet(t *testing.T) (*memory.Coordinator, map[string]shard.SessionID) {
	ctx := context.Background()
	c := memory.New()
	if _, err := c.Fleet().Configure(ctx, shard.Config{Shards: 4}); err != nil {
		t.Fatal(err)
	}
	sessions := map[string]shard.SessionID{}
	for i, id := range []string{"a", "b"} {
		sid, err := c.Sessions().Create(ctx, shard.SessionSpec{Worker: id, TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Members().Join(ctx, sid, shard.Member{ID: id, Version: "v9", Weight: 1}); err != nil {
			t.Fatal(err)
		}
		want := []shard.Acquisition{shard.AcquireShard(shard.ID("stream/shard-00"+string(rune('0'+2*i))), "initial: never owned")}
		if i == 0 {
			want = append(want, shard.AcquireShard("stream/shard-001", "initial: never owned"))
		}
		if _, err := c.Locks().Acquire(ctx, sid, want); err != nil {
			t.Fatal(err)
		}
		sessions[id] = sid
	}
	t.Cleanup(func() {
		for _, sid := range sessions {
			_ = c.Sessions().Destroy(context.Background(), sid)
		}
	})
	return c, sessions
}

// fleetJSON polls /api/v1/fleet until ok accepts it.
func fleetJSON(t *testing.T, base string, ok func(fleetview.Fleet) bool) fleetview.Fleet {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body, _ := get(t, base+"/api/v1/fleet")
		var f fleetview.Fleet
		if code == 200 {
			if err := json.Unmarshal([]byte(body), &f); err != nil {
				t.Fatalf("/api/v1/fleet is not a fleet: %v\n%s", err, body)
			}
			if ok(f) {
				return f
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/v1/fleet never matched: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestFleetJSONAndPage(t *testing.T) {
	c, _ := smallFleet(t)
	store := offmem.New()
	if err := store.Commit(context.Background(), "stream/shard-000", 1, 40); err != nil {
		t.Fatal(err)
	}
	base := serve(t, dashboard.Options{Name: "orders", Coordinator: c, Offsets: store,
		Head: func(shard.ID) (int64, bool) { return 100, true }})

	f := fleetJSON(t, base, func(f fleetview.Fleet) bool { return f.Config != nil })
	if f.Name != "orders" || f.Summary.Owned != 3 || f.Summary.Free != 1 || f.Summary.Live != 2 || !f.HasOffsets {
		t.Errorf("fleet %+v", f.Summary)
	}
	if s, _ := f.Shard("stream/shard-000"); s.Owner != "a" || s.Offset == nil || *s.Offset != 40 || s.Lag == nil || *s.Lag != 60 {
		t.Errorf("shard-000 = %+v, want a's with offset 40, lag 60", s)
	}

	code, page, h := get(t, base+"/")
	if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(page, "<title>shardlease · orders</title>") {
		t.Fatalf("page: %d %s\n%s", code, h.Get("Content-Type"), page)
	}
	if !strings.Contains(page, `data-crash="false"`) {
		t.Errorf("a dashboard without Crash offers crashing")
	}
	for _, asset := range []string{"/static/app.js", "/static/style.css"} {
		code, body, _ := get(t, base+asset)
		if code != 200 || len(body) < 500 {
			t.Errorf("%s: %d, %d bytes", asset, code, len(body))
		}
		if strings.Contains(body, "http://") || strings.Contains(body, "https://") {
			t.Errorf("%s refers to another site: the page must work offline", asset)
		}
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Errorf("the page refers to another site: it must work offline")
	}
	if code, _, _ := get(t, base+"/metrics"); code != 404 {
		t.Errorf("/metrics without a gatherer: %d, want 404", code)
	}
	if code, _, _ := get(t, base+"/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	resp, err := http.Post(base+"/api/v1/workers/a/crash", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
		t.Errorf("crash without Options.Crash: %d", resp.StatusCode)
	}
}

// TestEventStream: the stream sends the view at once, then a new one when
// ownership changes, with the move and its reason.
func TestEventStream(t *testing.T) {
	c, sessions := smallFleet(t)
	base := serve(t, dashboard.Options{Name: "orders", Coordinator: c})
	resp, err := http.Get(base + "/api/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := make(chan fleetview.Fleet, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "fleet":
				var f fleetview.Fleet
				if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &f) == nil {
					events <- f
				}
			}
		}
	}()
	next := func(ok func(fleetview.Fleet) bool) fleetview.Fleet {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case f, open := <-events:
				if !open {
					t.Fatal("stream ended")
				}
				if ok(f) {
					return f
				}
			case <-timeout:
				t.Fatal("no matching event within 10s")
			}
		}
	}
	next(func(f fleetview.Fleet) bool { return f.Summary.Owned == 3 })

	ctx := context.Background()
	if err := c.Locks().Release(ctx, sessions["a"], shard.ShardLocks([]shard.ID{"stream/shard-001"}), "rebalance"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Locks().Acquire(ctx, sessions["b"], []shard.Acquisition{shard.AcquireShard("stream/shard-001", "rebalanced from a (rebalance)")}); err != nil {
		t.Fatal(err)
	}
	f := next(func(f fleetview.Fleet) bool {
		s, _ := f.Shard("stream/shard-001")
		return s.Owner == "b"
	})
	found := false
	for _, e := range f.Events {
		if e.Kind == fleetview.Acquired && e.Shard == "stream/shard-001" && e.Worker == "b" && e.Reason == "rebalanced from a (rebalance)" {
			found = true
		}
	}
	if !found {
		t.Errorf("events %+v lack shard-001's move to b with its reason", f.Events)
	}
}

// TestMetricsAndCrash: /metrics serves the gatherer; the crash action
// needs its header (so another site cannot trigger it) and reports errors.
func TestMetricsAndCrash(t *testing.T) {
	c, _ := smallFleet(t)
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "shardlease_test_gauge", Help: "x"})
	reg.MustRegister(g)
	g.Set(7)
	var crashed []string
	base := serve(t, dashboard.Options{Coordinator: c, Gatherer: reg, Crash: func(id string) error {
		if id != "a" {
			return errors.New("no such live worker " + id)
		}
		crashed = append(crashed, id)
		return nil
	}})
	if code, body, _ := get(t, base+"/metrics"); code != 200 || !strings.Contains(body, "shardlease_test_gauge 7") {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
	if _, page, _ := get(t, base+"/"); !strings.Contains(page, `data-crash="true"`) {
		t.Errorf("the demo's page does not offer crashing")
	}
	post := func(id string, header bool) int {
		req, _ := http.NewRequest("POST", base+"/api/v1/workers/"+id+"/crash", nil)
		if header {
			req.Header.Set("X-Shardlease-Action", "crash")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("a", false); code != http.StatusForbidden {
		t.Errorf("crash without the header: %d, want 403", code)
	}
	if code := post("zz", true); code != http.StatusConflict {
		t.Errorf("crash of an unknown worker: %d, want 409", code)
	}
	if code := post("a", true); code != http.StatusNoContent || len(crashed) != 1 {
		t.Errorf("crash: %d, crashed %v", code, crashed)
	}
}

// TestUnreachableCoordinator: the page stays up and says why it is stale.
func TestUnreachableCoordinator(t *testing.T) {
	base := serve(t, dashboard.Options{Coordinator: shard.Intercept(memory.New(), unreachable)})
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body, _ := get(t, base+"/api/v1/fleet")
		if code == 503 && strings.Contains(body, "no route to the agent") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/api/v1/fleet: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, _, _ := get(t, base+"/healthz"); code != 503 {
		t.Errorf("/healthz with no view: %d", code)
	}
}

func unreachable(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
	if call.Op == shard.OpWatchFleet {
		return errors.New("coordinator unavailable: no route to the agent")
	}
	return invoke(ctx)
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/worker"
)

// servingAt finds the address in the log line "serving /metrics and
// /status" (console format: the fields as JSON).
var servingAt = regexp.MustCompile(`serving /metrics and /status\s+\{.*"addr": "([^"]+)"`)

// httpAddr waits for shardd's log line with the address it serves on.
func httpAddr(t *testing.T, errs fmt.Stringer) string {
	t.Helper()
	var addr string
	waitUntil(t, 15*time.Second, "shardd logs its HTTP address", func() bool {
		m := servingAt.FindStringSubmatch(errs.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	return addr
}

// TestRunStatusShowsTheChildrensLoads: shardd run's /status gives each
// shard the load its child wrote to descriptor 3.
func TestRunStatusShowsTheChildrensLoads(t *testing.T) {
	_, errs, _ := startRun(t, "--shards", "2", "--id", "w1", "--http", "127.0.0.1:0", "--", "sh", "-c",
		`printf 'load %s\n' $((SHARDLEASE_SHARD_INDEX * 10 + 5)) >&"$SHARDLEASE_LOAD_FD"; sleep 30`)
	addr := httpAddr(t, errs)
	var st worker.Status
	loads := map[string]float64{}
	waitUntil(t, 15*time.Second, "/status shows both shards' loads", func() bool {
		resp, err := http.Get("http://" + addr + "/status")
		if err != nil {
			t.Fatalf("GET /status: %v", err)
		}
		defer resp.Body.Close()
		st = worker.Status{}
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatalf("decoding /status: %v", err)
		}
		clear(loads)
		for _, sh := range st.Shards {
			if sh.Load != nil {
				loads[string(sh.Shard)] = *sh.Load
			}
		}
		return len(loads) == 2
	})
	if loads["stream/shard-000"] != 5 || loads["stream/shard-001"] != 15 {
		t.Errorf("loads in /status %v, want shard-000 at 5 and shard-001 at 15", loads)
	}
}

// TestReadiness: /readyz is 200 while the worker is active, and 503 with
// the state and what it waits on otherwise.
func TestReadiness(t *testing.T) {
	for _, tc := range []struct {
		st   worker.Status
		code int
		says string
	}{
		{worker.Status{State: worker.StateActive}, http.StatusOK, "ready"},
		{worker.Status{State: worker.StateJoining, Waiting: "the coordinator is not reachable: refused"}, http.StatusServiceUnavailable, "joining, waiting: the coordinator is not reachable"},
		{worker.Status{State: worker.StateDraining}, http.StatusServiceUnavailable, "not ready: draining"},
		{worker.Status{State: worker.StateStopped}, http.StatusServiceUnavailable, "not ready: stopped"},
	} {
		code, why := readiness(tc.st)
		if code != tc.code || !strings.Contains(why, tc.says) {
			t.Errorf("readiness(%s, %q) = %d %q, want %d saying %q", tc.st.State, tc.st.Waiting, code, why, tc.code, tc.says)
		}
	}
}

// TestReadyzServed: a running shardd answers /readyz with 200 once it is
// in the fleet.
func TestReadyzServed(t *testing.T) {
	_, errs, _ := startRun(t, "--shards", "2", "--id", "w1", "--http", "127.0.0.1:0", "--", "sh", "-c", "sleep 30")
	addr := httpAddr(t, errs)
	waitUntil(t, 15*time.Second, "/readyz answers 200", func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			t.Fatalf("GET /readyz: %v", err)
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// TestEtcdRequestsOnMetrics: a member on etcd exports the requests it
// sent, by gRPC method, its renewals among them.
func TestEtcdRequestsOnMetrics(t *testing.T) {
	cluster := etcdtest.Start(t)
	_, errs, _ := startRun(t, "--etcd", strings.Join(cluster.Endpoints(), ","), "--prefix", fmt.Sprintf("shardlease-test/metrics-%d", time.Now().UnixNano()),
		"--shards", "2", "--id", "w1", "--ttl", "2s", "--renew", "400ms", "--pause-budget", "1s", "--http", "127.0.0.1:0", "--", "sleep", "30")
	addr := httpAddr(t, errs)
	keepAlive := regexp.MustCompile(`shardlease_etcd_requests_total\{method="/etcdserverpb.Lease/LeaseKeepAlive",worker="w1"\} ([0-9]+)`)
	waitUntil(t, 15*time.Second, "/metrics counts the renewals sent to etcd", func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatalf("GET /metrics: %v", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		m := keepAlive.FindSubmatch(body)
		return m != nil && string(m[1]) != "0"
	})
}

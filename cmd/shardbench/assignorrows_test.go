package main

import (
	"strings"
	"testing"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/assignorstep"
)

// noBaseline lists the scenarios with shardlease rows and no baseline
// rows, because api.Lock has nothing to compare: no assignment a worker
// could be stuck in, no assignor to keep a restarting worker's shards, no
// load to balance (skewed-load compares with count balance instead), no
// resharding.
var noBaseline = map[string]bool{"stuck-worker": true, "rolling-restart": true, "skewed-load": true, "zone-outage": true, "zone-drain": true, "warm-moves": true, "engines": true, "reshard": true}

// checkAssignorRows checks, in a --small run of every scenario, the rows
// about the assignor itself (docs/benchmarks.md, "Results"): each is there
// and states its goal. It asserts nothing about time.
func checkAssignorRows(t *testing.T, rep bench.Report) {
	t.Helper()
	for _, tc := range []struct {
		scenario, system, metric string
		goal                     bool
	}{
		{"crash-failover", bench.SystemShardlease, "time until its shards have new handlers running$", true},
		{"crash-failover", bench.SystemShardlease, "the assignor's worker crashed", true},
		{"coordinator-load", bench.SystemShardlease, "Consul requests per worker per second, 10 workers × 200 shards$", false},
		{"coordinator-load", bench.SystemShardlease, "Consul server requests per worker per second, 10 workers × 200 shards$", true},
		{"coordinator-load", bench.SystemShardlease, "on session-TTL liveness", true},
		{"coordinator-load", bench.SystemShardlease, "of the assignor's worker, 10 workers × 200 shards", false},
		{"stuck-worker", bench.SystemShardlease, "unowned shard-time", true},
		{"stuck-worker", bench.SystemShardlease, "most owner changes of one shard", true},
		{"assignor-step", assignorstep.SystemRebalance, "rebalance.Step, cold (nothing held or assigned), 50 workers × 2000 shards$", true},
		{"assignor-step", assignorstep.SystemRebalance, "rebalance.Step, steady (balanced, nothing to write), 50 workers × 2000 shards$", true},
		{"assignor-step", assignorstep.SystemRebalance, "rebalance.Step, one join (a member more than steady), 50 workers × 2000 shards$", true},
		{"assignor-step", assignorstep.SystemRebalance, "rebalance.Step, one join (a member more than steady), 50 workers × 2000 shards, 3 zones$", true},
		{"zone-outage", bench.SystemShardlease, "until its shards are all owned again", true},
		{"zone-outage", bench.SystemShardlease, "shards of the other zones that changed owner", true},
		{"zone-drain", bench.SystemShardlease, "longest time a shard has no running handler", true},
		{"zone-drain", bench.SystemShardlease, "hand-offs in flight at once", true},
	} {
		found := 0
		for _, r := range rep.Results {
			// A metric ending in "$" is matched whole, others in part.
			whole, ok := strings.CutSuffix(tc.metric, "$")
			if r.Scenario != tc.scenario || r.System != tc.system || (ok && r.Metric != whole) || (!ok && !strings.Contains(r.Metric, tc.metric)) {
				continue
			}
			found++
			if tc.goal && (r.Goal == "" || r.Met == nil) {
				t.Errorf("%s / %s: no goal", r.Scenario, r.Metric)
			}
			t.Logf("%s / %s: p50 %v p99 %v, goal %q; %v (%s)", r.Scenario, r.Metric, r.P50, r.P99, r.Goal, r.Extra, r.Note)
		}
		if found != 1 {
			t.Errorf("%d %s rows of %s matching %q, want 1", found, tc.system, tc.scenario, tc.metric)
		}
	}
}

// checkEngineRows checks, in a --small run of every scenario, that the
// engines scenario measured each of its measures on both engines side by
// side: every etcd row right after its Consul twin, with its ratios to it.
// It asserts nothing about time.
func checkEngineRows(t *testing.T, rep bench.Report) {
	t.Helper()
	var consul, etcd int
	for i, r := range rep.Results {
		if r.Scenario != "engines" {
			continue
		}
		switch {
		case strings.HasSuffix(r.Metric, ", on Consul") || strings.Contains(r.Metric, ", on Consul,"):
			consul++
		case strings.HasSuffix(r.Metric, ", on etcd") || strings.Contains(r.Metric, ", on etcd,"):
			etcd++
			twin := strings.Replace(r.Metric, ", on etcd", ", on Consul", 1)
			if i == 0 || rep.Results[i-1].Metric != twin {
				t.Errorf("engines: etcd row %q does not follow its Consul twin", r.Metric)
			}
			if _, ok := r.Extra["ratio_to_consul_p50"]; !ok {
				t.Errorf("engines: etcd row %q has no ratio to Consul: %v", r.Metric, r.Extra)
			}
		default:
			t.Errorf("engines: row %q names no engine", r.Metric)
		}
	}
	if etcd == 0 || etcd != consul {
		t.Errorf("engines: %d rows on etcd, %d on Consul; want the same measures on both", etcd, consul)
	}
}

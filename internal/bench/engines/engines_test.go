package engines

import (
	"testing"

	"github.com/shardlease/shardlease/internal/bench"
)

// TestInterleave: each etcd row follows the Consul row of its measure,
// sizes and all, with its ratios to it; a row without a twin stays.
func TestInterleave(t *testing.T) {
	row := func(what, engine string, p50 float64) bench.Result {
		return bench.Result{Metric: metric(what, engine) + ", 3 workers × 16 shards", Unit: "s", P50: p50, P99: 2 * p50}
	}
	consul := []bench.Result{row("a", bench.EngineConsul, 1), row("b", bench.EngineConsul, 2)}
	etcd := []bench.Result{row("b", bench.EngineEtcd, 3), row("a", bench.EngineEtcd, 4), row("c", bench.EngineEtcd, 5)}
	got := interleave([][]bench.Result{consul, etcd})
	want := []string{consul[0].Metric, etcd[1].Metric, consul[1].Metric, etcd[0].Metric, etcd[2].Metric}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i, r := range got {
		if r.Metric != want[i] {
			t.Errorf("row %d = %q, want %q", i, r.Metric, want[i])
		}
	}
	if r := got[1].Extra["ratio_to_consul_p50"]; r != 4 {
		t.Errorf("a's etcd ÷ Consul p50 = %v, want 4", r)
	}
	if _, ok := got[4].Extra["ratio_to_consul_p50"]; ok {
		t.Error("a row without a Consul twin got a ratio")
	}
}

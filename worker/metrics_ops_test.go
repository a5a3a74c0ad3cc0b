package worker_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardlease/shardlease/shard"
)

// TestOperatorStateMetrics: the assignor exports the freeze, the cordons
// and the hand-offs in flight from its listing, and zeroes them when it
// stops; a worker that is not the assignor exports zeros.
func TestOperatorStateMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 8)
		regs := map[string]*prometheus.Registry{}
		for _, id := range []string{"a", "b"} {
			cfg := f.config(id, f.events.waiting(id))
			regs[id] = newRegistry()
			cfg.Registerer = regs[id]
			f.startWith(cfg)
			settle(10 * time.Second)
		}
		s := f.snapshot()
		leader, other := s.Assignor.Worker, "a"
		if leader == "a" {
			other = "b"
		}
		ctx := t.Context()
		if err := f.coord.Fleet().SetFreeze(ctx, &shard.Mark{By: "carol", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		m, _ := s.Member(other)
		cordoned := m.Member
		cordoned.Cordon = &shard.Mark{By: "alice", At: time.Now()}
		if err := f.coord.Members().Join(ctx, m.Session, cordoned); err != nil {
			t.Fatal(err)
		}
		settle(5 * time.Second)
		for name, want := range map[string]float64{"shardlease_fleet_frozen": 1, "shardlease_members_cordoned": 1,
			"shardlease_members_returning": 0, "shardlease_moves_in_flight": 0} {
			if got := gaugeValue(t, regs[leader], name); got != want {
				t.Errorf("the assignor's %s = %v, want %v", name, got, want)
			}
			if got := gaugeValue(t, regs[other], name); got != 0 {
				t.Errorf("%s, not the assignor, exports %s = %v, want 0", other, name, got)
			}
		}
		if err := f.stop(leader); err != nil {
			t.Fatal(err)
		}
		if got := gaugeValue(t, regs[leader], "shardlease_fleet_frozen"); got != 0 {
			t.Errorf("a stopped assignor still exports fleet_frozen = %v", got)
		}
	})
}

// gaugeValue reads the gauge name from reg (0 when absent).
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() == name && len(fam.GetMetric()) > 0 {
			return fam.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

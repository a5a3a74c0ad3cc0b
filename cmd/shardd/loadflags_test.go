package main

import (
	"bytes"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// TestLoadFlags: --load-balance and its tunables reach worker.Config
// alike for `shardd worker` and `shardd run`; without --load-balance the
// fleet balances counts.
func TestLoadFlags(t *testing.T) {
	base := []string{"--consul=127.0.0.1:1", "--prefix=p", "--shards=8", "--id=w1"}
	on := append(base[:len(base):len(base)], "--load-balance", "--imbalance-tolerance=0.2", "--shard-weights=stream/shard-003=4, stream/shard-005=0.5", "--load-report-every=5s")
	var errb bytes.Buffer
	wf, code, ok := parseWorkerFlags(on, &errb)
	if !ok {
		t.Fatalf("shardd worker: exit %d: %s", code, errb.String())
	}
	rf, code, ok := parseRunFlags(append(on, "--", "true"), &errb)
	if !ok {
		t.Fatalf("shardd run: exit %d: %s", code, errb.String())
	}
	for _, c := range []memberFlags{wf.memberFlags, rf.memberFlags} {
		cfg := c.settings()
		if cfg.LoadBalance == nil || cfg.LoadBalance.Tolerance != 0.2 || cfg.LoadReportEvery.Seconds() != 5 {
			t.Fatalf("settings: LoadBalance %+v, LoadReportEvery %v; want tolerance 0.2 and 5s", cfg.LoadBalance, cfg.LoadReportEvery)
		}
		for id, want := range map[shard.ID]float64{"stream/shard-003": 4, "stream/shard-005": 0.5, "stream/shard-000": 1} {
			if got := cfg.ShardWeight(id); got != want {
				t.Errorf("weight of %s: %v, want %v", id, got, want)
			}
		}
	}
	wf, _, ok = parseWorkerFlags(base, &errb)
	if cfg := wf.settings(); !ok || cfg.LoadBalance != nil || cfg.ShardWeight != nil {
		t.Fatalf("without --load-balance: %+v, want count balance", cfg)
	}
}

func TestLoadFlagsRefused(t *testing.T) {
	base := []string{"--consul=127.0.0.1:1", "--prefix=p", "--shards=8", "--id=w1"}
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--load-balance", "--shard-weights=stream/shard-001"}, `entry "stream/shard-001" is not SHARD=WEIGHT`},
		{[]string{"--load-balance", "--shard-weights=stream/shard-001=-2"}, `weight "-2" of shard "stream/shard-001" is not a finite number ≥ 0`},
		{[]string{"--load-balance", "--shard-weights=stream/shard-001=1,stream/shard-001=2"}, `shard "stream/shard-001" is given a weight twice`},
		{[]string{"--load-balance", "--shard-weights=stream/shard-042=2"}, `--shard-weights names shard "stream/shard-042", which is not one of the fleet's 8`},
		{[]string{"--imbalance-tolerance=0.2"}, "--imbalance-tolerance and --shard-weights need --load-balance"},
		{[]string{"--load-balance", "--imbalance-tolerance=-0.1"}, "load balance tolerance -0.1 must be a finite fraction ≥ 0"},
		{[]string{"--load-report-every=100ms"}, "load report interval 100ms is shorter than 1s"},
	} {
		var errb bytes.Buffer
		wf, _, ok := parseWorkerFlags(append(base[:len(base):len(base)], c.flags...), &errb)
		var err error
		if ok {
			err = wf.check(nil, nil)
		}
		got := errb.String()
		if err != nil {
			got += err.Error()
		}
		if !bytes.Contains([]byte(got), []byte(c.want)) {
			t.Errorf("shardd worker %v: %q, want it to say %q", c.flags, got, c.want)
		}
	}
}

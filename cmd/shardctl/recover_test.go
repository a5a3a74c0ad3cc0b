package main

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/shard"
)

// TestRecover: recover needs -offsets; with the store's floors within the
// coordinator's history it says there is nothing to recover and writes
// nothing; with floors of 10^6 above a coordinator in the tens (workers
// started on it own nothing), it names how many shards are behind, asks,
// writes nothing when not confirmed, and once confirmed raises the
// generation and waits until every shard is owned again; status then
// shows the generation, and a second recover has nothing to do.
func TestRecover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 8)
		ctx := t.Context()
		code, out, errOut := f.run(ctx, "", "recover", "-prefix", "orders")
		wantOneLineError(t, code, out, errOut, 2, "-offsets is required")

		for _, id := range f.shards.IDs() {
			if err := f.store.Fence(context.Background(), id, 1_000_000); err != nil {
				t.Fatal(err)
			}
		}
		f.start("w1")
		f.start("w2")
		settle(30 * time.Second)
		if n := len(f.owners()); n == len(f.shards.IDs()) {
			t.Fatalf("%d shards owned with every floor at 10^6: the fixture does not lose its history", n)
		}

		code, out, errOut = f.run(ctx, "n\n", "recover", "-prefix", "orders", "-offsets", "consul")
		if code == 0 || !strings.Contains(out, "8 of 8 shards have offsets floors above every token") || !strings.Contains(out, "from 0 to 1") ||
			!strings.Contains(errOut, "not recovered: not confirmed") {
			t.Fatalf("recover answered n: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if g := f.snapshot().Config.Generation; g != 0 {
			t.Fatalf("generation %d after a recovery that was not confirmed, want 0", g)
		}

		code, out, errOut = f.run(ctx, "y\n", "recover", "-prefix", "orders", "-offsets", "consul")
		if code != 0 || !strings.Contains(out, "generation raised from 0 to 1") || !strings.Contains(out, "every shard owned again") {
			t.Fatalf("recover answered y: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		for _, st := range f.snapshot().Shards {
			if !st.Held() || st.Token.Generation() != 1 {
				t.Errorf("%s after the recovery: %+v, want held in generation 1", st.Shard, st)
			}
		}

		_, out, _ = f.run(ctx, "", "status", "-prefix", "orders", "-no-shards", "-offsets", "consul")
		if !strings.Contains(out, "; generation 1") || strings.Contains(out, "HISTORY BEHIND") {
			t.Errorf("status after the recovery does not show generation 1, or still a lost history:\n%s", out)
		}
		code, out, _ = f.run(ctx, "", "recover", "-prefix", "orders", "-offsets", "consul")
		if code != 0 || !strings.Contains(out, "nothing to recover") {
			t.Errorf("a second recover: exit %d, %q; want nothing to recover", code, out)
		}
		if g := f.snapshot().Config.Generation; g != 1 {
			t.Errorf("generation %d after a recovery with nothing to do, want 1", g)
		}
	})
}

// TestStepsLine: status names the live workers that do not speak the
// generations step, and what waits for them.
func TestStepsLine(t *testing.T) {
	f := fleetviewWithSteps(shard.Config{Shards: 4, Generation: 2})
	got := stepsLine(f)
	if !strings.Contains(got, `"generations" is not spoken by live workers w2 (0.1.0)`) || !strings.Contains(got, "recover' refuses") ||
		!strings.Contains(got, "generation 2") {
		t.Errorf("stepsLine = %q", got)
	}
	f = fleetview.Build(fleetview.Input{Name: "orders", Now: time.Now(), Snapshot: shard.Snapshot{Index: 9, Config: f.Config,
		Members: []shard.MemberState{{Member: shard.Member{ID: "w1", Steps: shard.Steps(), Weight: 1}, Session: "s1"}}}})
	if got := stepsLine(f); got != "" {
		t.Errorf("stepsLine with every live worker speaking it = %q, want none", got)
	}
}

// fleetviewWithSteps is the view of a fleet of cfg with two live workers,
// w1 of this build and w2 of release 0.1.0 (no steps), and a dead one of
// 0.1.0.
func fleetviewWithSteps(cfg shard.Config) fleetview.Fleet {
	cfg = cfg.Normalize()
	member := func(id, version string, steps []string, session shard.SessionID) shard.MemberState {
		return shard.MemberState{Member: shard.Member{ID: id, Version: version, Steps: steps, Weight: 1}, Session: session}
	}
	return fleetview.Build(fleetview.Input{Name: "orders", Now: time.Now(), Snapshot: shard.Snapshot{Index: 9, Config: &cfg,
		Members: []shard.MemberState{member("w1", shard.Release, shard.Steps(), "s1"), member("w2", "0.1.0", nil, "s2"), member("w3", "0.1.0", nil, "")}}})
}

package main

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestBalance: shardctl balance shows that a fleet stores no policy, sets
// only the settings named (keeping the others), turns load balancing on
// and off, and the stored policy is what the next read shows.
func TestBalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 6, "w1", "w2")
		run := func(args ...string) string {
			t.Helper()
			code, out, errOut := f.run(t.Context(), "", append([]string{"balance", "-prefix", "orders"}, args...)...)
			if code != 0 {
				t.Fatalf("balance %v: exit %d: %s", args, code, errOut)
			}
			return out
		}
		if out := run(); !strings.Contains(out, "fleet orders stores no balance policy") {
			t.Fatalf("a fleet at the defaults: %q, want that it stores none", out)
		}

		if code, _, errOut := f.run(t.Context(), "", "balance", "-prefix", "orders", "-moves", "4"); code != exitBadInvoke || !strings.Contains(errOut, "name what it balances with -by") {
			t.Fatalf("a partial change with no policy stored: exit %d, %q; want exit 2 asking for -by", code, errOut)
		}
		out := run("-by", "count", "-moves", "4", "-stuck-after", "1m")
		want := shard.BalancePolicy{MaxMovesInFlight: 4, StuckAfter: time.Minute}
		if p := f.snapshot().Policy; p == nil || !p.Equal(want) {
			t.Fatalf("stored after -moves 4 -stuck-after 1m: %v, want %v (output %q)", p, want, out)
		}
		if !strings.Contains(out, "was: none stored") {
			t.Errorf("the first set does not say nothing was stored before: %q", out)
		}

		out = run("-by", "load", "-tolerance", "0.2")
		want.Load = &shard.LoadBalance{Tolerance: 0.2}
		if p := f.snapshot().Policy; p == nil || !p.Equal(want) {
			t.Fatalf("stored after -by load -tolerance 0.2: %v, want %v (output %q)", p, want, out)
		}
		if !strings.Contains(out, "was: moves in flight 4, stuck after 1m0s") {
			t.Errorf("the change does not show what it replaced: %q", out)
		}
		if out := run(); !strings.Contains(out, "balancing load (tolerance ±20 %") {
			t.Errorf("show after load on: %q", out)
		}

		run("-patience", "30s")
		want.Load.Patience = 30 * time.Second
		if p := f.snapshot().Policy; p == nil || !p.Equal(want) {
			t.Fatalf("stored after -patience 30s: %v, want %v", p, want)
		}

		run("-by", "count")
		want.Load = nil
		if p := f.snapshot().Policy; p == nil || !p.Equal(want) {
			t.Fatalf("stored after -by count: %v, want %v", p, want)
		}

		out = run("-prepare-timeout", "20s", "-standbys", "1")
		want.PrepareTimeout, want.Standbys = 20*time.Second, 1
		if p := f.snapshot().Policy; p == nil || !p.Equal(want) || !strings.Contains(out, "prepare timeout 20s, 1 standby per shard") {
			t.Fatalf("stored after -prepare-timeout 20s -standbys 1: %v, want %v (output %q)", p, want, out)
		}
	})
}

// TestBalancePrepareTimeoutNeedsTheStep: a prepare timeout is refused,
// naming the worker, while a live worker does not speak the standbys
// step (release 0.1.0 could not read the policy), and nothing is written.
func TestBalancePrepareTimeoutNeedsTheStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 6, "w1")
		ctx := t.Context()
		sid, err := f.coord.Sessions().Create(ctx, shard.SessionSpec{Worker: "w-old", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.coord.Members().Join(ctx, sid, shard.Member{ID: "w-old", Version: "0.1.0", Weight: 1}); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := f.run(ctx, "", "balance", "-prefix", "orders", "-by", "count", "-standbys", "1")
		if want := `w-old (0.1.0)`; code != exitBadInvoke || !strings.Contains(errOut, want) || !strings.Contains(errOut, `"standbys"`) {
			t.Fatalf("-standbys beside a 0.1.0 worker: exit %d, stderr %q; want exit 2 naming %s and the step", code, errOut, want)
		}
		if p := f.snapshot().Policy; p != nil {
			t.Fatalf("a refused change wrote %v", p)
		}
	})
}

// TestBalanceBadValues: every wrong value is named with what to do, the
// exit is 2, and nothing is written.
func TestBalanceBadValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 6, "w1")
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"-moves", "-3"}, "-moves -3 must not be negative"},
			{[]string{"-stuck-after", "-1s"}, "-stuck-after -1s must not be negative"},
			{[]string{"-by", "weight"}, `-by "weight" must be count or load`},
			{[]string{"-by", "count", "-prepare-timeout", "2h"}, "-prepare-timeout 2h0m0s must be between 0"},
			{[]string{"-by", "count", "-standbys", "5"}, "-standbys 5 must be between 0 (none) and 3"},
			{[]string{"-by", "load", "-tolerance", "1.5"}, "-tolerance 1.5 must be a fraction in [0, 1)"},
			{[]string{"-by", "load", "-gain", "-0.1"}, "-gain -0.1 must be a fraction in [0, 1)"},
			{[]string{"-by", "count", "-patience", "1m"}, "-patience tunes load balancing and cannot go with -by count"},
			{[]string{"-residence", "1m"}, "stores no readable balance policy (its assignor follows its own worker's flags): name what it balances with -by"},
		} {
			code, _, errOut := f.run(t.Context(), "", append([]string{"balance", "-prefix", "orders"}, tc.args...)...)
			if code != exitBadInvoke || !strings.Contains(errOut, tc.want) {
				t.Errorf("balance %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errOut, tc.want)
			}
			if p := f.snapshot().Policy; p != nil {
				t.Fatalf("balance %v stored %v", tc.args, p)
			}
		}
		if _, err := f.coord.Fleet().SetPolicy(t.Context(), shard.BalancePolicy{MaxMovesInFlight: 3}, false); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := f.run(t.Context(), "", "balance", "-prefix", "orders", "-residence", "1m")
		if want := "-residence tune load balancing, and the fleet balances shard counts: add -by load"; code != exitBadInvoke || !strings.Contains(errOut, want) {
			t.Errorf("-residence on a fleet balancing counts: exit %d, stderr %q; want exit 2 naming %q", code, errOut, want)
		}
		if p := f.snapshot().Policy; p == nil || !p.Equal(shard.BalancePolicy{MaxMovesInFlight: 3}) {
			t.Errorf("a refused change wrote %v", p)
		}
	})
}

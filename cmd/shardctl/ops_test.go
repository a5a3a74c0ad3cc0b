package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/shard"
)

// TestCordon: a cordon is recorded with who and why, shown by status
// (the worker's state and a line saying who set it and when) and in its
// JSON; the worker keeps its shards; asking again says who cordoned it;
// uncordon lifts it; an unknown worker is refused on one line.
func TestCordon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 8, "w1", "w2")
		ctx := t.Context()
		before := f.owners()
		code, out, errOut := f.run(ctx, "", "cordon", "-prefix", "orders", "--by", "alice", "--reason", "bad disk", "w2")
		if code != 0 || !strings.Contains(out, "w2 cordoned by alice since 00:") || !strings.Contains(out, "bad disk: it keeps its 4 shards") {
			t.Fatalf("cordon: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		settle(30 * time.Second)
		if after := f.owners(); len(after) != len(before) {
			t.Errorf("owners after the cordon %v, before %v", after, before)
		}
		for sh, w := range before {
			if f.owners()[sh] != w {
				t.Errorf("%s moved from %s after the cordon", sh, w)
			}
		}
		if m, _ := f.snapshot().Member("w2"); m.Cordon == nil || m.Cordon.By != "alice" {
			t.Errorf("w2's member key %+v after the cordon and 30 s of its worker running: the cordon is gone", m)
		}

		_, out, _ = f.run(ctx, "", "status", "-prefix", "orders", "-no-shards")
		if !regexp.MustCompile(`(?m)^w2\s+live cordoned\s+4\s`).MatchString(out) ||
			!regexp.MustCompile(`(?m)^  w2 cordoned by alice since 00:\d\d:\d\d \(\S+ ago\): bad disk: keeps what it has`).MatchString(out) {
			t.Errorf("status does not show w2 cordoned by alice:\n%s", out)
		}
		_, out, _ = f.run(ctx, "", "status", "-prefix", "orders", "-json", "-move-budget", "7")
		var fl fleetview.Fleet
		if err := json.Unmarshal([]byte(out), &fl); err != nil {
			t.Fatal(err)
		}
		if fl.Queue.Budget != 7 {
			t.Errorf("status -json -move-budget 7: queue %+v", fl.Queue)
		}
		if w, _ := fl.Worker("w2"); w.Cordon == nil || w.Cordon.By != "alice" || w.Cordon.Reason != "bad disk" || w.Cordon.At.IsZero() || fl.Summary.Cordoned != 1 {
			t.Errorf("status -json: w2 %+v (cordon %+v), %d cordoned; want alice's cordon", w, w.Cordon, fl.Summary.Cordoned)
		}

		code, out, _ = f.run(ctx, "", "cordon", "-prefix", "orders", "--by", "bob", "w2")
		if code != 0 || !strings.Contains(out, "w2 is already cordoned by alice since") || !strings.Contains(out, "nothing to do") {
			t.Errorf("second cordon: exit %d, %q", code, out)
		}
		code, out, errOut = f.run(ctx, "", "cordon", "-prefix", "orders", "--by", "bob", "w1")
		wantOneLineError(t, code, out, errOut, exitFailed, "w1 is the only live worker neither cordoned nor draining")

		code, out, _ = f.run(ctx, "", "uncordon", "-prefix", "orders", "w2")
		if code != 0 || !strings.Contains(out, "cordon of w2 lifted") {
			t.Errorf("uncordon: exit %d, %q", code, out)
		}
		code, out, _ = f.run(ctx, "", "uncordon", "-prefix", "orders", "w2")
		if code != 0 || !strings.Contains(out, "w2 is not cordoned (it owns 4 shards); nothing to do") {
			t.Errorf("second uncordon: exit %d, %q", code, out)
		}
		code, out, errOut = f.run(ctx, "", "cordon", "-prefix", "orders", "--by", "bob", "nope")
		wantOneLineError(t, code, out, errOut, exitFailed, `no worker "nope" in fleet orders (workers: w1, w2)`)
	})
}

// TestFreeze: a freeze is recorded with who and why, shown by status and
// in its JSON; freezing again says who froze it and writes nothing;
// unfreeze lifts it and says whose freeze it was; unfreezing a fleet not
// frozen says so.
func TestFreeze(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 4, "w1")
		ctx := t.Context()
		code, out, errOut := f.run(ctx, "", "unfreeze", "-prefix", "orders")
		if code != 0 || out != "fleet orders is not frozen; nothing to do\n" {
			t.Errorf("unfreeze of a fleet not frozen: exit %d, %q, %q", code, out, errOut)
		}
		code, out, errOut = f.run(ctx, "", "freeze", "-prefix", "orders", "--by", "carol", "--reason", "incident 42")
		if code != 0 || !strings.Contains(out, "fleet orders frozen by carol since 00:") || !strings.Contains(out, "incident 42: no rebalancing moves") {
			t.Fatalf("freeze: exit %d, %q, %q", code, out, errOut)
		}
		index := f.snapshot().Index
		code, out, _ = f.run(ctx, "", "freeze", "-prefix", "orders", "--by", "dave")
		if code != 0 || !strings.Contains(out, "fleet orders is already frozen by carol since") || !strings.Contains(out, "incident 42; nothing to do") {
			t.Errorf("second freeze: exit %d, %q", code, out)
		}
		if s := f.snapshot(); s.Index != index || s.Freeze == nil || s.Freeze.By != "carol" {
			t.Errorf("the second freeze wrote (index %d → %d) or changed the freeze: %+v", index, s.Index, s.Freeze)
		}

		_, out, _ = f.run(ctx, "", "status", "-prefix", "orders", "-no-shards")
		if !regexp.MustCompile(`(?m)^FROZEN by carol since 00:\d\d:\d\d \(\S+ ago\): incident 42: no rebalancing moves start`).MatchString(out) {
			t.Errorf("status does not show the freeze:\n%s", out)
		}
		_, out, _ = f.run(ctx, "", "status", "-prefix", "orders", "-json")
		var fl fleetview.Fleet
		if err := json.Unmarshal([]byte(out), &fl); err != nil {
			t.Fatal(err)
		}
		if fl.Freeze == nil || fl.Freeze.By != "carol" || fl.Freeze.Reason != "incident 42" || fl.Freeze.At.IsZero() {
			t.Errorf("status -json freeze %+v, want carol's", fl.Freeze)
		}

		code, out, _ = f.run(ctx, "", "unfreeze", "-prefix", "orders")
		if code != 0 || !strings.Contains(out, "fleet orders unfrozen (it was frozen by carol since") {
			t.Errorf("unfreeze: exit %d, %q", code, out)
		}
		if s := f.snapshot(); s.Freeze != nil {
			t.Errorf("still frozen after unfreeze: %+v", s.Freeze)
		}
	})
}

// TestOperatorName: --by wins, then SHARDLEASE_OPERATOR, then the user
// at this host; with none of them the command is refused (exit 2) before
// it connects.
func TestOperatorName(t *testing.T) {
	a, _, _ := newApp("")
	env := map[string]string{}
	a.getenv = func(k string) string { return env[k] }
	if _, err := a.operatorName(""); err == nil || !strings.Contains(err.Error(), "pass --by NAME") {
		t.Errorf("no name at all: %v, want a refusal asking for --by", err)
	}
	env["USER"] = "erin"
	if got, _ := a.operatorName(""); !strings.HasPrefix(got, "erin") {
		t.Errorf("from $USER: %q", got)
	}
	env["SHARDLEASE_OPERATOR"] = "oncall"
	if got, _ := a.operatorName(""); got != "oncall" {
		t.Errorf("from SHARDLEASE_OPERATOR: %q", got)
	}
	if got, _ := a.operatorName("frank"); got != "frank" {
		t.Errorf("from --by: %q", got)
	}

	b, out, errOut := newApp("")
	b.connect = func(connFlags) (*fleetConn, error) {
		t.Fatal("connected without knowing who acts")
		return nil, nil
	}
	code := b.run(t.Context(), []string{"freeze", "-prefix", "orders"})
	wantOneLineError(t, code, out.String(), errOut.String(), exitBadInvoke, "shardctl freeze: cannot tell who you are", "pass --by NAME")
}

// TestStatusShowsReturningAndQueue: a worker inside its rejoin grace is
// shown with the end of the grace, and the move queue with its budget.
func TestStatusShowsReturningAndQueue(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cfg := shard.Config{Shards: 4}.Normalize()
	f := fleetview.Fleet{Name: "orders", Config: &cfg,
		Freeze: &shard.Mark{By: "carol", At: now.Add(-time.Minute)},
		Workers: []fleetview.Worker{
			{ID: "w1", State: fleetview.WorkerLive, Shards: 3},
			{ID: "w2", State: fleetview.WorkerDead, RejoinUntil: now.Add(25 * time.Second), Returning: true},
		},
		Queue: fleetview.Queue{InFlight: 2, Budget: 16, Queued: 5},
	}
	var b strings.Builder
	writeStatus(&b, f, now, false)
	out := b.String()
	for _, want := range []string{
		"FROZEN by carol since 11:59:00 (1m00s ago): no rebalancing moves start",
		"move queue: 2 hand-offs in flight of a budget of 16 · 5 waiting (until the freeze is lifted)",
		"  w2 restarting: its shards are reserved for it until 12:00:25 (in 25s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^w2\s+dead returning\s+0\s`).MatchString(out) {
		t.Errorf("w2 is not shown dead and returning:\n%s", out)
	}
	f.Freeze, f.Queue = nil, fleetview.Queue{InFlight: 3, Budget: 16, Queued: 2}
	b.Reset()
	writeStatus(&b, f, now, false)
	if want := "move queue: 3 hand-offs in flight of a budget of 16 · 2 waiting"; !strings.Contains(b.String(), want) {
		t.Errorf("status of a fleet with a queue lacks %q:\n%s", want, b.String())
	}
	f.Queue = fleetview.Queue{}
	b.Reset()
	writeStatus(&b, f, now, false)
	if out := b.String(); strings.Contains(out, "FROZEN") || strings.Contains(out, "move queue") {
		t.Errorf("status of a fleet neither frozen nor moving shows a freeze or a queue:\n%s", out)
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/assignor"
	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/shard"
)

// settle lets virtual time pass and every goroutine reach a blocking point.
func settle(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// TestStatusTable: every shard with its owner, the worker it is assigned
// to, token, since and why; every worker with its state, shards owned and
// assigned, version and session; dead members shown as dead; the headline
// with the imbalance and the moves pending.
func TestStatusTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 12, "w1", "w2", "w3", "w4")
		f.stop("w4")
		settle(30 * time.Second)
		code, out, errOut := f.run(t.Context(), "", "status", "-prefix", "orders")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		t.Logf("\n%s", out)
		for _, want := range []string{
			"fleet orders · 12 shards (stream/shard-000 … stream/shard-011)",
			"owned 12/12 · workers 3 live, 1 dead · imbalance 0 · moves pending 0",
			"WORKER  STATE  OWNED  ASSIGNED  VERSION  SESSION",
			"SHARD             OWNER  ASSIGNED  TOKEN  SINCE",
			"WHY IT LAST MOVED",
			"LATEST ACQUISITIONS",
			"versions: v1.4.2 (protocol 3) ×3",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("status output lacks %q", want)
			}
		}
		if !regexp.MustCompile(`(?m)^w4\s+dead\s+0\s+0\s+v1\.4\.2\s+-\s`).MatchString(out) {
			t.Errorf("w4 is not shown as dead with no session")
		}
		snap := f.snapshot()
		sessions := map[shard.SessionID]string{}
		for _, m := range snap.Members {
			if m.Live() {
				sessions[m.Session] = m.ID
				row := regexp.MustCompile(fmt.Sprintf(`(?m)^%s\s+live\s+4\s+4\s+v1\.4\.2\s+%s\s`, m.ID, regexp.QuoteMeta(short(string(m.Session)))))
				if !row.MatchString(out) {
					t.Errorf("no row for live worker %s owning 4 shards, assigned 4, its version and session", m.ID)
				}
			}
		}
		for _, st := range snap.Shards {
			row := regexp.MustCompile(fmt.Sprintf(`(?m)^%s\s+%[2]s\s+%[2]s\s+%d\s+00:\d\d:\d\d \(\S+ ago\)\s+\S`, regexp.QuoteMeta(string(st.Shard)), sessions[st.Session], st.Token))
			if !row.MatchString(out) {
				t.Errorf("no row for %s owned by and assigned to %s with token %d, since and why", st.Shard, sessions[st.Session], st.Token)
			}
		}
		// The assignor, its epoch and since when; the shards w4 had went
		// to others by its assignment.
		a := snap.Assignor
		if want := fmt.Sprintf("assignor: %s (epoch %d, since 00:", a.Worker, a.Token); !a.Held() || !strings.Contains(out, want) {
			t.Errorf("status output lacks %q (P/assignor %+v)", want, a)
		}
		if !strings.Contains(out, "shutdown: from w4") {
			t.Errorf("no shard says it came from w4 at its shutdown")
		}

		// A worker the assignor judged stuck under its session is marked.
		var w3 shard.SessionID
		for _, m := range snap.Members {
			if m.ID == "w3" {
				w3 = m.Session
			}
		}
		given := snap.Assignments["w3"]
		given.Memory = assignor.Memory{Stuck: true, StuckSession: w3}.Encode()
		if err := f.coord.Assignments().Assign(t.Context(), a.Session, a.Token, map[string]*shard.Assignment{"w3": &given}); err != nil {
			t.Fatal(err)
		}
		_, out, _ = f.run(t.Context(), "", "status", "-prefix", "orders", "-no-shards")
		if !regexp.MustCompile(`(?m)^w3\s+live\s+4\s+4 stuck\s+v1\.4\.2\s`).MatchString(out) {
			t.Errorf("w3 is not marked stuck:\n%s", out)
		}
	})
}

// TestHeadlineMovesPending: the moves pending are the assignor's, read
// from the assignment keys, and split into hand-offs and placements when
// there are any.
func TestHeadlineMovesPending(t *testing.T) {
	for _, tc := range []struct {
		sum  fleetview.Summary
		want string
	}{
		{fleetview.Summary{Shards: 4, Owned: 4, Live: 2}, "owned 4/4 · workers 2 live · imbalance 0 · moves pending 0"},
		{fleetview.Summary{Shards: 4, Owned: 3, Free: 1, Live: 2, Imbalance: 1, PendingMoves: 3, HandOffs: 2, Placements: 1},
			"owned 3/4 · workers 2 live · imbalance 1 · moves pending 3 (hand-offs 2, placements 1)"},
	} {
		if got := headline(fleetview.Fleet{Summary: tc.sum}); got != tc.want {
			t.Errorf("headline(%+v) = %q, want %q", tc.sum, got, tc.want)
		}
	}
}

// TestAssignorLine: the assignor line when nobody holds P/assignor, or its
// value cannot be read.
func TestAssignorLine(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		a    fleetview.Assignor
		want string
	}{
		{fleetview.Assignor{Held: true, Worker: "w3", Epoch: 91, Since: now.Add(-3 * time.Minute)}, "w3 (epoch 91, since 11:57:00 (3m00s ago))"},
		{fleetview.Assignor{}, "none (P/assignor is free: between two assignors, or no worker has campaigned yet)"},
		{fleetview.Assignor{Held: true, Session: "0123456789abcdef", Epoch: 7, Problem: "P/assignor: not JSON"}, "held by session 01234567 (epoch 7), whose value cannot be read: P/assignor: not JSON"},
	} {
		if got := assignorLine(tc.a, now); got != tc.want {
			t.Errorf("assignorLine(%+v) = %q, want %q", tc.a, got, tc.want)
		}
	}
}

// TestStatusWithOffsets: -offsets adds each shard's committed offset and
// fencing floor (the owner fenced with its token on acquiring).
func TestStatusWithOffsets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 4, "w1")
		if err := f.store.Commit(t.Context(), "stream/shard-002", f.snapshot().Shards[2].Token, 1234); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := f.run(t.Context(), "", "status", "-prefix", "orders", "-offsets", "consul")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		t.Logf("\n%s", out)
		if !strings.Contains(out, "SHARD             OWNER  ASSIGNED  TOKEN  SINCE               OFFSET  FLOOR  WHY IT LAST MOVED") {
			t.Errorf("no offset and floor columns")
		}
		for _, st := range f.snapshot().Shards {
			offset := 0
			if st.Shard == "stream/shard-002" {
				offset = 1234
			}
			row := regexp.MustCompile(fmt.Sprintf(`(?m)^%s\s+w1\s+w1\s+%d\s+.*ago\)\s+%d\s+%d\s+initial`, regexp.QuoteMeta(string(st.Shard)), st.Token, offset, st.Token))
			if !row.MatchString(out) {
				t.Errorf("no row for %s with offset %d and floor %d", st.Shard, offset, st.Token)
			}
		}
		if code, _, errOut := f.run(t.Context(), "", "status", "-prefix", "orders", "-offsets", "bolt"); code != 2 || !strings.Contains(errOut, `want "consul"`) {
			t.Errorf("-offsets bolt: exit %d, %q", code, errOut)
		}
	})
}

// TestStatusJSON: the same model as the dashboard's /api/v1/fleet; every
// shard has its owner and token.
func TestStatusJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 16, "a", "b")
		code, out, errOut := f.run(t.Context(), "", "status", "-prefix", "orders", "-json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var got fleetview.Fleet
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("status -json is not JSON: %v\n%s", err, out)
		}
		owners := f.owners()
		if got.Name != "orders" || got.Config == nil || got.Config.Shards != 16 || len(got.Shards) != 16 {
			t.Fatalf("fleet %q config %+v with %d shards, want orders with 16", got.Name, got.Config, len(got.Shards))
		}
		for _, s := range got.Shards {
			if s.State != fleetview.ShardOwned || s.Owner != owners[s.ID] || s.Token == 0 || s.Since.IsZero() || s.Why == "" {
				t.Errorf("shard %+v: want owned by %s with a token, a since and a why", s, owners[s.ID])
			}
		}
		if len(got.Workers) != 2 || got.Workers[0].Shards != 8 || got.Workers[1].Shards != 8 || got.Summary.Imbalance != 0 {
			t.Errorf("workers %+v, summary %+v: want a and b with 8 each, imbalance 0", got.Workers, got.Summary)
		}
		if len(got.Events) == 0 || got.Events[0].Kind != fleetview.Acquired {
			t.Errorf("events %+v: want the latest acquisitions", got.Events)
		}
		snap := f.snapshot()
		if a := got.Assignor; !a.Held || a.Worker != snap.Assignor.Worker || a.Epoch != snap.Assignor.Token || a.Since.IsZero() {
			t.Errorf("assignor %+v, want %s at epoch %d", a, snap.Assignor.Worker, snap.Assignor.Token)
		}
		for _, w := range got.Workers {
			if w.Assigned != 8 || w.AssignedEpoch != snap.Assignor.Token {
				t.Errorf("worker %+v: want 8 assigned by epoch %d", w, snap.Assignor.Token)
			}
		}
	})
}

// TestWatch: a worker's shutdown shows as its releases, the acquisitions
// by the others with the reason, its departure, and the fleet line.
func TestWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 12, "w1", "w2", "w3")
		ctx, cancel := context.WithCancel(t.Context())
		type result struct {
			code     int
			out, err string
		}
		done := make(chan result, 1)
		go func() {
			code, out, errOut := f.run(ctx, "", "watch", "-prefix", "orders")
			done <- result{code, out, errOut}
		}()
		settle(time.Second)
		f.stop("w2")
		settle(30 * time.Second)
		cancel()
		r := <-done
		t.Logf("\n%s", r.out)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.err)
		}
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`^watching orders \(Ctrl-C to stop\): 12 shards · owned 12/12 · workers 3 live`),
			// No "← w2 released" line is required: a watch that wakes after
			// the new owner already took the shard sees one change, not
			// two (seen on a fresh clone); the reason is in the next line.
			regexp.MustCompile(`(?m)^\s+·  assignor: w[123] \(epoch \d+, since 00:00:\d\d \(\d+s ago\)\)$`),
			regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d\.\d{3}  stream/shard-\d{3} → w[13] from w2 \(token \d+\): shutdown: from w2$`),
			regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d\.\d{3}  worker w2 left: session ended after releasing its shards`),
			regexp.MustCompile(`(?m)^\s+·  owned 12/12 · workers 2 live, 1 dead · imbalance 0 · moves pending 0$`),
		} {
			if !want.MatchString(r.out) {
				t.Errorf("watch output does not match %s", want)
			}
		}
	})
}

// TestWatchShowsAssignorChanges: when the assignor's worker stops, watch
// prints the hand-over of P/assignor.
func TestWatchShowsAssignorChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 6, "w1", "w2")
		old := f.snapshot().Assignor.Worker
		next := map[string]string{"w1": "w2", "w2": "w1"}[old]
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan string, 1)
		go func() {
			_, out, _ := f.run(ctx, "", "watch", "-prefix", "orders")
			done <- out
		}()
		settle(time.Second)
		f.stop(old)
		settle(30 * time.Second)
		cancel()
		out := <-done
		t.Logf("\n%s", out)
		want := regexp.MustCompile(fmt.Sprintf(`(?m)^\d\d:\d\d:\d\d\.\d{3}  assignor %s elected \(epoch %d\): took the assignor lock`,
			next, f.snapshot().Assignor.Token))
		if next == "" || !want.MatchString(out) {
			t.Errorf("watch output does not match %s (the assignor was %q)", want, old)
		}
	})
}

// TestWatchJSON prints one event object per line.
func TestWatchJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 6, "w1", "w2")
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan string, 1)
		go func() {
			_, out, _ := f.run(ctx, "", "watch", "-prefix", "orders", "-json")
			done <- out
		}()
		settle(time.Second)
		f.start("w3")
		settle(30 * time.Second)
		cancel()
		out := <-done
		kinds := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var e fleetview.Event
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("line %q is not an event: %v", line, err)
			}
			kinds[e.Kind]++
		}
		// A release and the acquisition right after it may reach one watch
		// wake-up together, so releases are seen at most once per move.
		if kinds[fleetview.Joined] != 1 || kinds[fleetview.Released] > 2 || kinds[fleetview.Acquired] != 2 {
			t.Errorf("events by kind %v: want w3 joined and 2 shards acquired by it (each release seen at most once)", kinds)
		}
	})
}

// TestDrain: progress until the worker owns nothing; the others took its
// shards with the reason drain; undrain gives it a share back.
func TestDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 24, "w1", "w2", "w3")
		code, out, errOut := f.run(t.Context(), "", "drain", "-prefix", "orders", "w2")
		t.Logf("\n%s", out)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`^draining w2 \(8 shards, session \S+\): the assignor gives it no shards`),
			regexp.MustCompile(`(?m)^  w2:   0 shards left  \[#{20}\]  8/8 with their new owners \(\d+s\)$`),
			regexp.MustCompile(`(?m)^w2 drained in \d+s: it owns no shards and all 8 have new owners\. It is still a live member`),
		} {
			if !want.MatchString(out) {
				t.Errorf("drain output does not match %s", want)
			}
		}
		c := map[string]int{}
		for _, w := range f.owners() {
			c[w]++
		}
		if c["w2"] != 0 || c["w1"] != 12 || c["w3"] != 12 {
			t.Errorf("after the drain: %v", c)
		}
		drained := 0
		for _, st := range f.snapshot().Shards {
			if st.Owner.Why == (shard.Why{Reason: shard.ReasonDrain, From: "w2"}) {
				drained++
			}
		}
		if drained != 8 {
			t.Errorf("%d shards say they moved from w2 for its drain, want 8", drained)
		}

		// Draining again waits for nothing; undrain brings it back.
		if code, out, _ := f.run(t.Context(), "", "drain", "-prefix", "orders", "-no-wait", "w2"); code != 0 || !strings.Contains(out, "drain of w2 set: it owns 0 shards") {
			t.Errorf("second drain: exit %d, %q", code, out)
		}
		code, out, _ = f.run(t.Context(), "", "undrain", "-prefix", "orders", "w2")
		if code != 0 || !strings.Contains(out, "drain of w2 withdrawn") {
			t.Fatalf("undrain: exit %d, %q", code, out)
		}
		settle(30 * time.Second)
		c = map[string]int{}
		for _, w := range f.owners() {
			c[w]++
		}
		if c["w2"] != 8 {
			t.Errorf("after undrain: %v, want w2 back to 8", c)
		}
		if code, out, _ := f.run(t.Context(), "", "undrain", "-prefix", "orders", "w2"); code != 0 || !strings.Contains(out, "w2 is not draining") {
			t.Errorf("undrain of a worker not draining: exit %d, %q", code, out)
		}
	})
}

// TestRelease: the explanation and the prompt; "n" keeps the owner, "y"
// frees the shard, and the next owner shows with a higher token.
func TestRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 8, "w1", "w2")
		snap := f.snapshot()
		st := snap.Shards[5]
		owner := f.owners()[st.Shard]

		code, out, errOut := f.run(t.Context(), "n\n", "release", "-prefix", "orders", "5")
		wantOneLineError(t, code, out, errOut, 1, "stream/shard-005 not released: not confirmed")
		if got := f.snapshot().Shards[5]; got.Token != st.Token || got.Session != st.Session {
			t.Fatalf("a refused release moved the shard: %+v → %+v", st, got)
		}
		for _, want := range []string{
			fmt.Sprintf("stream/shard-005 is owned by %s with token %d, since 00:", owner, st.Token),
			fmt.Sprintf("carry token %d", st.Token),
			"Fencing protects the data",
			fmt.Sprintf("Release stream/shard-005 from %s? [y/N]", owner),
		} {
			if !strings.Contains(out, want) {
				t.Errorf("release prompt lacks %q:\n%s", want, out)
			}
		}

		code, out, errOut = f.run(t.Context(), "y\n", "release", "-prefix", "orders", "stream/shard-005")
		t.Logf("\n%s", out)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		after := f.snapshot().Shards[5]
		if !after.Held() || after.Token <= st.Token {
			t.Fatalf("after the release: %+v, want held again with a token above %d", after, st.Token)
		}
		for _, want := range []string{
			fmt.Sprintf("released stream/shard-005 (was %s, token %d)", owner, st.Token),
			fmt.Sprintf("stream/shard-005 → %s with token %d (> %d: writes with the old token are refused)", f.owners()[st.Shard], after.Token, st.Token),
			"operator: from " + owner,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("release output lacks %q", want)
			}
		}

		// -yes skips the prompt; a free shard is not an error.
		code, out, _ = f.run(t.Context(), "", "release", "-prefix", "orders", "-yes", "-wait", "0", "3")
		if code != 0 || strings.Contains(out, "[y/N]") || !strings.Contains(out, "released stream/shard-003") {
			t.Errorf("release -yes: exit %d\n%s", code, out)
		}
		f.stop("w1")
		f.stop("w2")
		code, out, _ = f.run(t.Context(), "", "release", "-prefix", "orders", "3")
		if code != 0 || !strings.Contains(out, "stream/shard-003 is already free (released by") {
			t.Errorf("release of a free shard: exit %d\n%s", code, out)
		}
	})
}

// TestDeleteShard: a held key is refused, naming release; a free one is
// deleted and the shard's next owner gets a higher token.
func TestDeleteShard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 4, "w1")
		code, out, errOut := f.run(t.Context(), "", "delete-shard", "-prefix", "orders", "stream/shard-003")
		wantOneLineError(t, code, out, errOut, 1, "stream/shard-003 is held by session", "release it instead")
		code, out, errOut = f.run(t.Context(), "", "delete-shard", "-prefix", "orders", "stream/shard-9")
		wantOneLineError(t, code, out, errOut, 1, `no key for "stream/shard-9" in fleet orders`)
		code, out, errOut = f.run(t.Context(), "", "delete-shard", "-prefix", "orders")
		wantOneLineError(t, code, out, errOut, 2, "missing SHARD")

		f.stop("w1")
		old, _ := f.snapshot().Shard("stream/shard-003")
		code, out, errOut = f.run(t.Context(), "", "delete-shard", "-prefix", "orders", "stream/shard-003")
		if want := fmt.Sprintf("deleted orders/shards/stream/shard-003 (free, token %d)", old.Token); code != 0 || !strings.Contains(out, want) {
			t.Fatalf("delete-shard of a free key: exit %d, %q %q; want %q", code, out, errOut, want)
		}
		if _, ok := f.snapshot().Shard("stream/shard-003"); ok {
			t.Fatalf("the key is still there")
		}
		f.start("w2")
		settle(30 * time.Second)
		if st, _ := f.snapshot().Shard("stream/shard-003"); !st.Held() || st.Token <= old.Token {
			t.Errorf("after the delete the shard is %+v, want held with a token above %d", st, old.Token)
		}
	})
}

// TestPolicy: passes and fails by how much, with what to change.
func TestPolicy(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{nil, 0, []string{"2 × 1s + 2.5s = 4.5s  vs  ttl 5s", "PASSES with 500ms to spare", "until 2.5s after", "about ttl + lock-delay = 8s later"}},
		{[]string{"-ttl", "10s", "-renew", "2s", "-pause", "6s"}, 0, []string{"PASSES with 0s to spare"}},
		{[]string{"-ttl", "10s", "-renew", "4s", "-pause", "5s"}, 1, []string{"FAILS by 3s", "-ttl 13s", "-renew 2.5s", "-pause 2s"}},
		{[]string{"-ttl", "5s", "-renew", "1s", "-pause", "6s"}, 1, []string{"FAILS by 3s", "-ttl 8s", "below 10s"}},
		{[]string{"-ttl", "2s", "-renew", "400ms", "-pause", "1s"}, 0, []string{"PASSES with 200ms to spare", "Consul refuses session TTLs below 10s"}},
		{nil, 0, []string{"rule 2: lock-delay ≥ ttl − pause:  lock-delay 3s  vs  5s − 2.5s = 2.5s", "PASSES with 500ms to spare: a session ended before its TTL"}},
		{[]string{"-ttl", "2s", "-renew", "500ms", "-pause", "1s", "-lock-delay", "500ms"}, 1,
			[]string{"FAILS by 500ms: lock-delay 500ms is shorter than the step-down deadline ttl − pause = 1s", "-lock-delay 1s", "two workers would run one shard"}},
		{[]string{"-ttl", "10s", "-renew", "1s", "-pause", "5s", "-lock-delay", "2s"}, 1, []string{"FAILS by 3s", "-lock-delay 5s", "-pause 8s"}},
		{[]string{"-ttl", "1500ms", "-renew", "300ms", "-pause", "900ms", "-lock-delay", "600ms"}, 0, []string{"PASSES with 0s to spare", "only the new owner's acquire and fence round trips"}},
	} {
		a, out, errOut := newApp("")
		code := a.run(context.Background(), append([]string{"policy"}, tc.args...))
		if code != tc.code {
			t.Errorf("policy %v: exit %d, want %d; %s", tc.args, code, tc.code, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("policy %v: output lacks %q:\n%s", tc.args, w, out)
			}
		}
		if strings.Contains(out.String(), "-renew") && tc.code == 1 && strings.Contains(tc.args[5], "6s") {
			t.Errorf("policy %v suggests a renew interval, but no renew can fit a pause above the ttl", tc.args)
		}
	}
	a, out, errOut := newApp("")
	if code := a.run(context.Background(), []string{"policy", "-ttl", "0s", "-renew", "-1s", "-lock-delay", "-1s"}); code != 2 {
		t.Errorf("policy with non-positive durations: exit %d, want 2", code)
	}
	wantOneLineError(t, 2, out.String(), errOut.String(), 2, "-ttl 0s must be positive", "-renew -1s must be positive", "-lock-delay -1s must not be negative")
}

// TestVersionsLine: one release says so; two say MIXED with both.
func TestVersionsLine(t *testing.T) {
	one := fleetview.Fleet{Versions: []fleetview.Version{{Release: "0.1.0", Protocol: 3, Workers: 4}}}
	if got := versionsLine(one); got != "versions: 0.1.0 (protocol 3) ×4" {
		t.Errorf("one release: %q", got)
	}
	two := fleetview.Fleet{Versions: []fleetview.Version{{Release: "0.1.0", Protocol: 3, Workers: 3}, {Release: "0.2.0", Protocol: 3, Workers: 1}}}
	if got := versionsLine(two); !strings.HasPrefix(got, "MIXED versions: 0.1.0 (protocol 3) ×3, 0.2.0 (protocol 3) ×1") {
		t.Errorf("two releases: %q", got)
	}
}

// TestVersionCommand: shardctl version names the release, the protocol
// and its steps, without reaching any fleet.
func TestVersionCommand(t *testing.T) {
	a, out, errOut := newApp("")
	if code := a.run(t.Context(), []string{"version"}); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "shardctl "+shard.Release) || !strings.Contains(out.String(), fmt.Sprintf("protocol %d, steps %s", shard.Protocol, strings.Join(shard.Steps(), " "))) {
		t.Errorf("shardctl version printed %q", out.String())
	}
}

// TestNoSessionFlagsOnReadOnlyCommands: shardctl opens no session, so it
// offers no -consul-liveness: passing one is an unknown flag.
func TestNoSessionFlagsOnReadOnlyCommands(t *testing.T) {
	a, _, errOut := newApp("")
	if code := a.run(t.Context(), []string{"status", "-prefix", "orders", "-consul-liveness", "ttl"}); code != exitBadInvoke ||
		!strings.Contains(errOut.String(), "flag provided but not defined: -consul-liveness") {
		t.Errorf("exit %d, stderr %q; want -consul-liveness refused as unknown", code, errOut.String())
	}
}

// TestHistoryWarning: held shards whose tokens are below the store's
// floors are named, three at most, with the count; none, no line.
func TestHistoryWarning(t *testing.T) {
	floor := shard.Token(1_000_000)
	f := fleetview.Fleet{Name: "orders", HasOffsets: true}
	for i := range 5 {
		id := shard.ID(fmt.Sprintf("s-%d", i))
		f.Shards = append(f.Shards, fleetview.Shard{ID: id, State: fleetview.ShardOwned, Token: shard.Token(20 + i), Floor: &floor})
		f.HistoryBehind = append(f.HistoryBehind, id)
	}
	got := historyWarning(f)
	if !strings.HasPrefix(got, "HISTORY BEHIND: 5 held shards' tokens are below the offsets store's floors: s-0 (token 20, floor 1000000), s-1") ||
		!strings.Contains(got, " and 2 more") || !strings.Contains(got, "The coordinator lost its history") ||
		!strings.Contains(got, "shardctl recover -prefix orders -offsets") {
		t.Errorf("got %q", got)
	}
	f.HistoryBehind = nil
	if got := historyWarning(f); got != "" {
		t.Errorf("nothing behind: %q, want no line", got)
	}
}

package coordtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/keycodec"
	"github.com/shardlease/shardlease/shard"
)

// campaign: P/assignor is free at first; a campaign takes it with an
// epoch, the holder campaigning again gets the same epoch without a write,
// another session is told no without an error or a write. A candidate
// waiting on the key is woken by the holder's release (not by a release
// by a session that does not hold it); a release sets no lock-delay, and the
// next holder's epoch is higher, also after an operator deleted the key.
func (s *suite) campaign(t *testing.T) {
	c := s.open(t)
	a := session(t, c, "w-a", long, 0)
	b := session(t, c, "w-b", long, 0)

	if k := assignor(t, c); k.Held() || k.Index == 0 || k.Token != 0 || k.Worker != "" {
		t.Fatalf("WatchAssignor(0) on a fresh fleet = %+v, want free at a non-zero index", k)
	}
	e1 := campaignHeld(t, c, a, "w-a")
	k := assignor(t, c)
	if k.Session != a || k.Worker != "w-a" || k.Token != e1 || k.Since.IsZero() || k.Problem != "" {
		t.Fatalf("assignor after w-a's campaign = %+v, want w-a's session %s at epoch %d since a time", k, a, e1)
	}

	idx := snapshot(t, c).Index
	if e, held := campaign(t, c, a, "w-a"); !held || e != e1 {
		t.Fatalf("the holder's second campaign = %d, %v; want its epoch %d", e, held, e1)
	}
	if e, held := campaign(t, c, b, "w-b"); held || e != 0 {
		t.Fatalf("campaign against a held lock = %d, %v; want 0, false", e, held)
	}
	noWrite(t, c, idx, quiet, "campaigns that took nothing")

	k = wakes(t, s.o.timing.Slack, fmt.Sprintf("WatchAssignor(%d)", k.Index), "the holder's Resign", k.Index,
		func(ctx context.Context) (shard.LockKey, error) {
			return c.Locks().Watch(ctx, shard.AssignorLock, k.Index)
		},
		func(k shard.LockKey) uint64 { return k.Index },
		func() { resign(t, c, b) }, func() { resign(t, c, a) })
	if k.Held() || k.Token != 0 {
		t.Fatalf("assignor after its holder resigned = %+v, want free", k)
	}
	e2 := campaignHeld(t, c, b, "w-b")
	if e2 <= e1 {
		t.Fatalf("second holder's epoch %d, want above the first's %d", e2, e1)
	}

	s.o.operator.DeleteAssignor(t, c)
	if k := assignor(t, c); k.Held() {
		t.Fatalf("assignor after an operator deleted it = %+v, want free", k)
	}
	resign(t, c, b) // holds nothing any more
	e3 := campaignHeld(t, c, a, "w-a")
	if e3 <= e2 {
		t.Fatalf("epoch after the key was deleted %d, want above %d", e3, e2)
	}
}

// assignorDiesWithSession: P/assignor is released when its session ends
// (a destroy, which may come from anyone), a candidate waiting on it is
// woken, and it stays closed to every session for the lock-delay, as the
// session's shard locks do; then the next holder's epoch is higher.
func (s *suite) assignorDiesWithSession(t *testing.T) {
	c := s.open(t)
	delay := s.o.timing.LockDelay
	a := session(t, c, "w-a", long, delay)
	b := session(t, c, "w-b", long, 0)
	e1 := campaignHeld(t, c, a, "w-a")
	before := assignor(t, c)

	var destroyed time.Time // at or before the coordinator's moment of the destroy
	k := wakes(t, s.o.timing.Slack, fmt.Sprintf("WatchAssignor(%d)", before.Index), "the holder's session's end", before.Index,
		func(ctx context.Context) (shard.LockKey, error) {
			return c.Locks().Watch(ctx, shard.AssignorLock, before.Index)
		},
		func(k shard.LockKey) uint64 { return k.Index },
		func() {}, func() { destroyed = time.Now(); destroy(t, c, a) })
	if k.Held() {
		t.Fatalf("assignor after its session was destroyed = %+v, want free", k)
	}
	if e, held := campaign(t, c, b, "w-b"); held {
		t.Fatalf("w-b took the assignor lock (epoch %d) %v after the destroy began, inside its lock-delay of %v", e, time.Since(destroyed), delay)
	}
	var e2 shard.Token
	for deadline := destroyed.Add(delay + s.o.timing.Slack); ; {
		e, held := campaign(t, c, b, "w-b")
		if held {
			e2 = e
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock-delay %v not over %v after the destroy: the assignor lock is still refused", delay, time.Since(destroyed))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if after := time.Since(destroyed); after < delay {
		t.Fatalf("w-b took the assignor lock %v after the destroy, before its lock-delay of %v ended", after, delay)
	}
	if e2 <= e1 {
		t.Fatalf("epoch after the lock-delay %d, want above the destroyed session's %d", e2, e1)
	}
}

// assignFenced: only the session holding P/assignor at exactly the epoch
// given may write assignment keys. Another session, the holder with an
// epoch it does not hold (a later one, or the one it held before it
// resigned and campaigned again), a deposed assignor and an ended session
// are refused with ErrNotAssignor, and nothing is written. The holder's
// write stores what it was given, with its epoch, shards in config order.
func (s *suite) assignFenced(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	ids := configure(t, c, 8).IDs()
	a := session(t, c, "w-a", long, 0)
	b := session(t, c, "w-b", long, 0)
	e1 := campaignHeld(t, c, a, "w-a")

	set := map[string]*shard.Assignment{
		"w-a": {Epoch: 999, Shards: []shard.ID{ids[3], ids[0], ids[1]}, Free: []shard.ID{ids[3]}, AsOf: 7,
			Why: map[shard.ID]shard.Why{ids[3]: {Reason: shard.ReasonOrphaned, From: "w-c"}}, Memory: []byte(`{"v":1,"memo":"a"}`)},
		"w-b": {Shards: ids[4:6], Release: map[shard.ID]shard.Why{ids[6]: {Reason: shard.ReasonLoad}}, Memory: []byte(`{"v":1,"memo":"b"}`)},
	}
	idx := snapshot(t, c).Index
	for _, tt := range notTheAssignor(a, b, e1) {
		if err := c.Assignments().Assign(ctx, tt.sid, tt.epoch, set); !errors.Is(err, shard.ErrNotAssignor) {
			t.Fatalf("Assign by %s = %v, want ErrNotAssignor", tt.name, err)
		}
	}
	noWrite(t, c, idx, quiet, "refused Assign calls")

	assign(t, c, a, e1, set)
	if set["w-a"].Epoch != 999 {
		t.Fatalf("Assign modified its argument: epoch %d", set["w-a"].Epoch)
	}
	want := map[string]shard.Assignment{
		"w-a": {Epoch: e1, Shards: []shard.ID{ids[0], ids[1], ids[3]}, Free: []shard.ID{ids[3]}, AsOf: 7,
			Why: map[shard.ID]shard.Why{ids[3]: {Reason: shard.ReasonOrphaned, From: "w-c"}}, Memory: []byte(`{"v":1,"memo":"a"}`)},
		"w-b": {Epoch: e1, Shards: ids[4:6], Release: map[shard.ID]shard.Why{ids[6]: {Reason: shard.ReasonLoad}}, Memory: []byte(`{"v":1,"memo":"b"}`)},
	}
	checkAssignments(t, "after the holder's Assign", snapshot(t, c).Assignments, want)
	for w, a := range want {
		a.Memory = nil // the assignor's: a worker's watch does not carry it
		if k := assignment(t, c, w); !k.Exists || k.Problem != "" || !sameAssignment(k.Assignment, a) {
			t.Errorf("WatchAssignment(%s, 0) = %+v, want %+v", w, k, a)
		}
	}

	// The holder resigns and campaigns again: its old epoch is refused.
	resign(t, c, a)
	e2 := campaignHeld(t, c, a, "w-a")
	if err := c.Assignments().Assign(ctx, a, e1, map[string]*shard.Assignment{"w-a": nil}); !errors.Is(err, shard.ErrNotAssignor) {
		t.Fatalf("Assign by the holder of epoch %d with its earlier epoch %d = %v, want ErrNotAssignor", e2, e1, err)
	}
	// Deposed: b took the lock; a's writes at its last epoch are refused.
	resign(t, c, a)
	e3 := campaignHeld(t, c, b, "w-b")
	err := c.Assignments().Assign(ctx, a, e2, map[string]*shard.Assignment{"w-a": nil})
	if !errors.Is(err, shard.ErrNotAssignor) || !strings.Contains(err.Error(), string(a)) {
		t.Fatalf("Assign by the deposed assignor = %v, want ErrNotAssignor naming its session", err)
	}
	checkAssignments(t, "after refused writes", snapshot(t, c).Assignments, want)

	assign(t, c, b, e3, map[string]*shard.Assignment{"w-a": nil, "never-written": nil})
	delete(want, "w-a")
	checkAssignments(t, "after the new holder deleted w-a's key", snapshot(t, c).Assignments, want)
	if k := assignment(t, c, "w-a"); k.Exists {
		t.Fatalf("w-a's key after its deletion = %+v, want missing", k)
	}

	destroy(t, c, b)
	if err := c.Assignments().Assign(ctx, b, e3, map[string]*shard.Assignment{"w-b": nil}); !errors.Is(err, shard.ErrNotAssignor) {
		t.Fatalf("Assign by an ended session = %v, want ErrNotAssignor", err)
	}
	checkAssignments(t, "after an ended session's Assign", snapshot(t, c).Assignments, want)
}

// assignBatches: an Assign of more keys than one transaction takes is
// split, in sorted worker order, MaxTxnAssignments keys per transaction
// (each with its own index), and writes them all; deleting them all works
// the same way.
func (s *suite) assignBatches(t *testing.T) {
	c := s.open(t)
	const workers = 200
	ids := configure(t, c, 2*workers).IDs()
	a := session(t, c, "assignor", long, 0)
	epoch := campaignHeld(t, c, a, "assignor")
	set := make(map[string]*shard.Assignment, workers)
	names := make([]string, workers)
	for i := range workers {
		names[i] = fmt.Sprintf("w-%03d", i)
		set[names[i]] = &shard.Assignment{Shards: ids[2*i : 2*i+2]}
	}
	assign(t, c, a, epoch, set)

	got := snapshot(t, c).Assignments
	if len(got) != workers {
		t.Fatalf("%d assignments after assigning %d workers", len(got), workers)
	}
	var indexes []uint64 // per worker, in sorted order
	for i, w := range names {
		if !slices.Equal(got[w].Shards, ids[2*i:2*i+2]) || got[w].Epoch != epoch {
			t.Fatalf("%s = %+v, want %v at epoch %d", w, got[w], ids[2*i:2*i+2], epoch)
		}
		indexes = append(indexes, assignment(t, c, w).Index)
	}
	per := s.o.maxTxnAssignments
	for i := range indexes {
		first := i - i%per // the first worker of i's transaction
		if indexes[i] != indexes[first] || (first > 0 && indexes[first] <= indexes[first-1]) {
			t.Fatalf("transaction indexes %v: want %d workers per transaction, in sorted order, each transaction later", indexes, per)
		}
	}
	if n := len(slices.Compact(slices.Clone(indexes))); n != (workers+per-1)/per {
		t.Fatalf("%d transactions for %d workers, want %d of at most %d", n, workers, (workers+per-1)/per, per)
	}

	for w := range set {
		set[w] = nil
	}
	assign(t, c, a, epoch, set)
	if got := snapshot(t, c).Assignments; len(got) != 0 {
		t.Fatalf("%d assignments left after deleting all", len(got))
	}
}

// watchAssignment: Assignments.Watch(0) returns the key at once (missing:
// not existing, at a non-zero index); a later call blocks until that key
// is written or deleted, and writes of other keys — other workers'
// assignments, shard locks — do not wake it while it exists.
func (s *suite) watchAssignment(t *testing.T) {
	c := s.open(t)
	ids := configure(t, c, 8).IDs()
	a := session(t, c, "assignor", long, 0)
	b := session(t, c, "w-b", long, 0)
	epoch := campaignHeld(t, c, a, "assignor")

	start := time.Now()
	if k := assignment(t, c, "w-x"); k.Exists || k.Index == 0 {
		t.Fatalf("WatchAssignment(w-x, 0) before any write = %+v, want missing at a non-zero index", k)
	}
	if d := time.Since(start); d > s.o.timing.Slack {
		t.Fatalf("WatchAssignment(w-x, 0) took %v, want at once", d)
	}
	assign(t, c, a, epoch, map[string]*shard.Assignment{"w-x": {Shards: ids[:1]}, "w-y": {Shards: ids[1:2]}})
	k := assignment(t, c, "w-x")
	if !k.Exists || k.Problem != "" || !slices.Equal(k.Assignment.Shards, ids[:1]) || k.Assignment.Epoch != epoch {
		t.Fatalf("WatchAssignment(w-x, 0) = %+v, want %v at epoch %d", k, ids[:1], epoch)
	}

	n := 0
	noise := func() {
		n++
		assign(t, c, a, epoch, map[string]*shard.Assignment{"w-y": {Shards: ids[n%8 : n%8+1]}, "w-xy": {Shards: ids[:n%8]}})
		acquire(t, c, b, ids[7])
		release(t, c, b, shard.ReasonRebalance, ids[7])
	}
	watch := func(what string, write func()) shard.AssignmentKey {
		after := k.Index
		return wakes(t, s.o.timing.Slack, fmt.Sprintf("WatchAssignment(w-x, %d)", after), what, after,
			func(ctx context.Context) (shard.AssignmentKey, error) {
				return c.Assignments().Watch(ctx, "w-x", after)
			},
			func(k shard.AssignmentKey) uint64 { return k.Index }, noise, write)
	}
	k = watch("its own write", func() {
		assign(t, c, a, epoch, map[string]*shard.Assignment{"w-x": {Shards: ids[2:4]}})
	})
	if !k.Exists || !slices.Equal(k.Assignment.Shards, ids[2:4]) {
		t.Fatalf("after its write: %+v, want %v", k, ids[2:4])
	}
	k = watch("its deletion", func() { assign(t, c, a, epoch, map[string]*shard.Assignment{"w-x": nil}) })
	if k.Exists {
		t.Fatalf("after its deletion: %+v, want missing", k)
	}
}

// snapshotAssign: a snapshot shows who holds P/assignor at which epoch,
// and every assignment; the assignor lock, unlike the assignment keys,
// goes with its session.
func (s *suite) snapshotAssign(t *testing.T) {
	c := s.open(t)
	ids := configure(t, c, 4).IDs()
	if snap := snapshot(t, c); snap.Assignor.Held() || snap.Assignments == nil || len(snap.Assignments) != 0 {
		t.Fatalf("fresh fleet: assignor %+v, assignments %v; want free and an empty map", snap.Assignor, snap.Assignments)
	}
	a := session(t, c, "w-a", long, 0)
	epoch := campaignHeld(t, c, a, "w-a")
	assign(t, c, a, epoch, map[string]*shard.Assignment{"w-a": {Shards: ids[:2]}, "w-b": {Shards: ids[2:]}})
	snap := snapshot(t, c)
	if k := snap.Assignor; k.Session != a || k.Worker != "w-a" || k.Token != epoch || k.Index < uint64(epoch) {
		t.Fatalf("snapshot assignor = %+v, want w-a's session %s at epoch %d", k, a, epoch)
	}
	checkAssignments(t, "snapshot", snap.Assignments, map[string]shard.Assignment{
		"w-a": {Epoch: epoch, Shards: ids[:2]}, "w-b": {Epoch: epoch, Shards: ids[2:]},
	})
	if len(snap.Problems) != 0 {
		t.Fatalf("problems %q in a fleet without foreign keys", snap.Problems)
	}

	destroy(t, c, a)
	snap = snapshot(t, c)
	if snap.Assignor.Held() || len(snap.Assignments) != 2 {
		t.Fatalf("after the assignor's session ended: assignor %+v, %d assignments; want free, and the keys kept", snap.Assignor, len(snap.Assignments))
	}
}

// malformedAssignment: an assignment key whose value cannot be read (not
// JSON, shards outside the config) is a problem naming the key, never an
// assignment; Assignments.Watch returns it with Problem set. Readable keys
// beside it are unaffected.
func (s *suite) malformedAssignment(t *testing.T) {
	c := s.open(t)
	ids := configure(t, c, 8).IDs()
	a := session(t, c, "w-a", long, 0)
	epoch := campaignHeld(t, c, a, "w-a")
	assign(t, c, a, epoch, map[string]*shard.Assignment{"w-ok": {Shards: ids[:1]}})
	bad := map[string]string{
		"w-garbage": `not json`,
		"w-beyond":  `{"epoch":1,"since":"2025-01-01T00:00:00Z","shards":"0-8"}`,
		"w-ranges":  `{"epoch":1,"since":"2025-01-01T00:00:00Z","shards":"5,1"}`,
	}
	for w, v := range bad {
		s.o.operator.PutAssignment(t, c, w, []byte(v))
	}
	snap := snapshot(t, c)
	checkAssignments(t, "beside malformed keys", snap.Assignments, map[string]shard.Assignment{"w-ok": {Epoch: epoch, Shards: ids[:1]}})
	for w := range bad {
		if !slices.ContainsFunc(snap.Problems, func(p string) bool { return strings.Contains(p, "assign/"+w) }) {
			t.Errorf("problems %q do not name assign/%s", snap.Problems, w)
		}
		if k := assignment(t, c, w); !k.Exists || k.Problem == "" {
			t.Errorf("WatchAssignment(%s, 0) = %+v, want it to exist with a problem", w, k)
		}
	}
}

// assignmentEdited: a worker's key is the assignor's word only when the
// key and the assignor's memory beside it were written by one Assign. A
// plain write of either — however well formed, whatever epoch it names,
// the same bytes again — unseals the pair: snapshots list it as a problem
// (shard.Unsealed) instead of an assignment, and the worker's watch
// returns it with that problem. The assignor's next Assign seals it again.
func (s *suite) assignmentEdited(t *testing.T) {
	c := s.open(t)
	cfg := configure(t, c, 8)
	ids := cfg.IDs()
	a := session(t, c, "w-a", long, 0)
	epoch := campaignHeld(t, c, a, "w-a")
	written := &shard.Assignment{Shards: ids[:2], Memory: []byte(`{"v":1}`)}
	assign(t, c, a, epoch, map[string]*shard.Assignment{"w-1": written, "w-2": written})

	edited := shard.Assignment{Epoch: epoch, Shards: ids[:5], Free: ids[2:5], AsOf: 3}
	value, err := keycodec.EncodeAssignment(cfg, edited)
	if err != nil {
		t.Fatal(err)
	}
	s.o.operator.PutAssignment(t, c, "w-1", value)
	s.o.operator.PutAssignmentMemory(t, c, "w-2", []byte(`{"v":1,"stuck":true}`))
	snap := snapshot(t, c)
	for _, w := range []string{"w-1", "w-2"} {
		if got, ok := snap.Assignments[w]; ok {
			t.Errorf("%s's key edited by hand is listed as an assignment: %+v", w, got)
		}
		if !slices.ContainsFunc(snap.Problems, func(p string) bool { return strings.Contains(p, w) && strings.Contains(p, shard.Unsealed) }) {
			t.Errorf("problems %q do not say %s's key is not sealed", snap.Problems, w)
		}
		if k := assignment(t, c, w); !k.Exists || k.Problem != shard.Unsealed && !strings.HasSuffix(k.Problem, shard.Unsealed) {
			t.Errorf("WatchAssignment(%s, 0) = %+v, want it to exist with the problem %q", w, k, shard.Unsealed)
		}
	}

	assign(t, c, a, epoch, map[string]*shard.Assignment{"w-1": written, "w-2": written})
	snap = snapshot(t, c)
	for _, w := range []string{"w-1", "w-2"} {
		if got, ok := snap.Assignments[w]; !ok || !slices.Equal(got.Shards, ids[:2]) {
			t.Errorf("after the assignor wrote it again %s = %+v (listed %v), want its assignment back", w, got, ok)
		}
	}
	if k := assignment(t, c, "w-1"); k.Problem != "" || !slices.Equal(k.Assignment.Shards, ids[:2]) {
		t.Errorf("WatchAssignment(w-1, 0) after the assignor wrote it again = %+v", k)
	}
}

func campaign(t *testing.T, c shard.Coordinator, sid shard.SessionID, worker string) (shard.Token, bool) {
	t.Helper()
	grants, err := c.Locks().Acquire(t.Context(), sid, []shard.Acquisition{{Lock: shard.AssignorLock}})
	if err != nil {
		t.Fatalf("Campaign(%s, %s): %v", sid, worker, err)
	}
	if len(grants) == 0 {
		return 0, false
	}
	return grants[0].Token, true
}

// campaignHeld campaigns and fails the test unless the session holds
// P/assignor afterwards, at a non-zero epoch.
func campaignHeld(t *testing.T, c shard.Coordinator, sid shard.SessionID, worker string) shard.Token {
	t.Helper()
	epoch, held := campaign(t, c, sid, worker)
	if !held || epoch == 0 {
		t.Fatalf("Campaign(%s, %s) = %d, %v; want the lock at a non-zero epoch (assignor: %+v)", sid, worker, epoch, held, assignor(t, c))
	}
	return epoch
}

func resign(t *testing.T, c shard.Coordinator, sid shard.SessionID) {
	t.Helper()
	if err := c.Locks().Release(t.Context(), sid, []shard.Lock{shard.AssignorLock}, shard.ReasonShutdown); err != nil {
		t.Fatalf("Resign(%s): %v", sid, err)
	}
}

func assign(t *testing.T, c shard.Coordinator, sid shard.SessionID, epoch shard.Token, set map[string]*shard.Assignment) {
	t.Helper()
	if err := c.Assignments().Assign(t.Context(), sid, epoch, set); err != nil {
		t.Fatalf("Assign(%s, epoch %d, %d keys): %v", sid, epoch, len(set), err)
	}
}

// assignor returns P/assignor without blocking.
func assignor(t *testing.T, c shard.Coordinator) shard.LockKey {
	t.Helper()
	k, err := c.Locks().Watch(t.Context(), shard.AssignorLock, 0)
	if err != nil {
		t.Fatalf("WatchAssignor(0): %v", err)
	}
	return k
}

// assignment returns worker's assignment key without blocking.
func assignment(t *testing.T, c shard.Coordinator, worker string) shard.AssignmentKey {
	t.Helper()
	k, err := c.Assignments().Watch(t.Context(), worker, 0)
	if err != nil {
		t.Fatalf("WatchAssignment(%s, 0): %v", worker, err)
	}
	return k
}

func checkAssignments(t *testing.T, when string, got, want map[string]shard.Assignment) {
	t.Helper()
	for w, a := range want {
		if g, ok := got[w]; !ok || !sameAssignment(g, a) {
			t.Errorf("%s: %s = %+v (found %v), want %+v", when, w, g, ok, a)
		}
	}
	for w := range got {
		if _, ok := want[w]; !ok {
			t.Errorf("%s: unexpected assignment of %s: %+v", when, w, got[w])
		}
	}
}

func sameAssignment(a, b shard.Assignment) bool {
	return a.Epoch == b.Epoch && slices.Equal(a.Shards, b.Shards) && slices.Equal(a.Free, b.Free) && a.AsOf == b.AsOf &&
		maps.Equal(a.Why, b.Why) && maps.Equal(a.Release, b.Release) && bytes.Equal(a.Memory, b.Memory)
}

// notTheAssignor are the sessions and epochs every assignor-only write
// must refuse while session holder holds P/assignor at epoch and other
// is another live session.
func notTheAssignor(holder, other shard.SessionID, epoch shard.Token) []struct {
	name  string
	sid   shard.SessionID
	epoch shard.Token
} {
	return []struct {
		name  string
		sid   shard.SessionID
		epoch shard.Token
	}{
		{"a session that does not hold it", other, epoch},
		{"the holder with a later epoch", holder, epoch + 1},
		{"the holder with an earlier epoch", holder, epoch - 1},
	}
}

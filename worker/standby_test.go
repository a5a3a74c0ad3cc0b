package worker_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// standbyHandler records what its standby side and its Process did, in
// order; its standby reads the committed offset and reports it.
type standbyHandler struct {
	mu  sync.Mutex
	log []string
}

func (h *standbyHandler) note(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = append(h.log, fmt.Sprintf(format, args...))
}

func (h *standbyHandler) lines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.log)
}

func (h *standbyHandler) Standby(ctx context.Context, s *worker.StandbyClaim) error {
	cp, err := s.Committed(ctx)
	if err != nil {
		return err
	}
	h.note("standby %s from %d", s.Shard, cp.Offset)
	s.Report(cp.Offset, true)
	<-ctx.Done()
	// Still running after its context ended: Process must wait for it.
	time.Sleep(time.Second)
	h.note("standby %s ended: %v", s.Shard, context.Cause(ctx))
	return nil
}

func (h *standbyHandler) Process(ctx context.Context, c *worker.Claim) error {
	warm := "cold"
	if c.Warm != nil {
		warm = fmt.Sprintf("warm at %d", c.Warm.Applied)
	}
	h.note("process %s %s", c.Shard, warm)
	<-ctx.Done()
	return nil
}

// countingStore counts the fences and commits that reach the offsets store.
type countingStore struct {
	offsets.Store
	mu     sync.Mutex
	writes map[shard.ID]int
}

func (s *countingStore) Fence(ctx context.Context, id shard.ID, t shard.Token) error {
	s.count(id)
	return s.Store.Fence(ctx, id, t)
}

func (s *countingStore) Commit(ctx context.Context, id shard.ID, t shard.Token, offset int64) error {
	s.count(id)
	return s.Store.Commit(ctx, id, t, offset)
}

func (s *countingStore) count(id shard.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes[id]++
}

func (s *countingStore) writesOf(id shard.ID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes[id]
}

// TestStandbyIsPromotedWarm: with the test as the fleet's assignor, a
// shard listed as standby runs the handler's standby side, which takes
// no lock and writes nothing to the offsets store; listed as the
// worker's, the shard is taken, the standby ends with ErrPromoted, and
// Process starts only after it returned, warm at its report. A standby
// no longer listed ends with ErrStandbyDropped; a handler without a
// standby side runs none.
func TestStandbyIsPromotedWarm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 4)
		ctx := t.Context()
		ids := f.shards.IDs()
		// The test holds the assignor's lock, so no worker becomes the
		// assignor and the keys are the test's.
		sid, err := f.coord.Sessions().Create(ctx, shard.SessionSpec{Worker: "test", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		epoch, held, err := shard.TryLock(ctx, f.coord.Locks(), sid, shard.AssignorLock)
		if err != nil || !held {
			t.Fatalf("taking the assignor's lock: %v, %v", held, err)
		}
		if _, err := f.coord.Fleet().Configure(ctx, f.shards); err != nil {
			t.Fatal(err)
		}
		if err := f.store.Fence(ctx, ids[1], 1); err != nil {
			t.Fatal(err)
		}
		if err := f.store.Commit(ctx, ids[1], 1, 41); err != nil {
			t.Fatal(err)
		}
		store := &countingStore{Store: f.store, writes: map[shard.ID]int{}}
		h := &standbyHandler{}
		cfg := f.config("a", nil)
		cfg.Handler, cfg.Offsets = h, store
		f.startWith(cfg)
		assign := func(shards, standby []shard.ID) {
			t.Helper()
			if err := f.coord.Assignments().Assign(ctx, sid, epoch, map[string]*shard.Assignment{"a": {Shards: shards, Standby: standby}}); err != nil {
				t.Fatal(err)
			}
			settle(10 * time.Second)
		}

		assign(nil, []shard.ID{ids[1], ids[2]})
		if got := h.lines(); !slices.Contains(got, fmt.Sprintf("standby %s from 41", ids[1])) || !slices.Contains(got, fmt.Sprintf("standby %s from 0", ids[2])) {
			t.Fatalf("after two standbys were listed: %q", got)
		}
		if owners := f.owners(); len(owners) != 0 {
			t.Fatalf("a standby took a lock: owners %v", owners)
		}
		if st := f.running["a"].w.Status().Standbys; len(st) != 2 || st[0].Shard != ids[1] || st[0].Report == nil || st[0].Report.Applied != 41 || !st[0].Report.CaughtUp {
			t.Fatalf("a's status lists standbys %+v, want %s reporting 41 caught up, and %s", st, ids[1], ids[2])
		}
		if n := store.writesOf(ids[1]) + store.writesOf(ids[2]); n != 0 {
			t.Fatalf("standbys reached the offsets store's writes %d times, want 0", n)
		}
		member := func(id string) shard.MemberState {
			t.Helper()
			snap, err := f.coord.Fleet().Watch(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			m, _ := snap.Member(id)
			return m
		}
		want := map[shard.ID]shard.StandbyState{ids[1]: {Applied: 41, Ready: true}, ids[2]: {Applied: 0, Ready: true}}
		if m := member("a"); !m.StandbyCapable || !maps.Equal(m.Standby, want) {
			t.Fatalf("a's member as the assignor reads it: capable %v, standbys %v; want capable, %v", m.StandbyCapable, m.Standby, want)
		}

		assign([]shard.ID{ids[1]}, []shard.ID{ids[1]})
		got := h.lines()[2:]
		ended1 := slices.Index(got, fmt.Sprintf("standby %s ended: %v", ids[1], worker.ErrPromoted))
		ended2 := slices.Index(got, fmt.Sprintf("standby %s ended: %v", ids[2], worker.ErrStandbyDropped))
		processed := slices.Index(got, fmt.Sprintf("process %s warm at 41", ids[1]))
		if len(got) != 3 || ended1 < 0 || ended2 < 0 || processed < ended1 {
			t.Fatalf("after the shard was given: %q; want %s's standby promoted and then its Process warm, %s's standby dropped", got, ids[1], ids[2])
		}
		if f.owners()[ids[1]] != "a" || store.writesOf(ids[1]) != 1 {
			t.Fatalf("owners %v, %d fences of %s; want a owning it, fenced once", f.owners(), store.writesOf(ids[1]), ids[1])
		}
		if m := member("a"); m.Standby != nil {
			t.Fatalf("a's standbys as the assignor reads them after the promotion: %v, want none (the key deleted)", m.Standby)
		}

		// A handler with no standby side: the list is ignored.
		cfg = f.config("b", f.events.waiting("b"))
		f.startWith(cfg)
		if err := f.coord.Assignments().Assign(ctx, sid, epoch, map[string]*shard.Assignment{"b": {Standby: []shard.ID{ids[3]}}}); err != nil {
			t.Fatal(err)
		}
		settle(10 * time.Second)
		if n := len(h.lines()); n != 5 {
			t.Fatalf("%d notes, want the 5 above: %q", n, h.lines())
		}
		if owner, ok := f.owners()[ids[3]]; ok {
			t.Fatalf("%s owned by %s: a standby listed to a handler without a standby side took it", ids[3], owner)
		}
		if m := member("b"); m.StandbyCapable || m.Standby != nil {
			t.Fatalf("b's member: capable %v, standbys %v; want neither (its handler has no standby side)", m.StandbyCapable, m.Standby)
		}
	})
}

// overlapHandler counts, per shard, its standby and Process runs at once,
// and keeps the highest; its standby stays a minute after its context
// ends (a slow one), its Process returns at once.
type overlapHandler struct {
	mu      sync.Mutex
	running map[shard.ID]int
	most    int
	causes  []string
}

func (h *overlapHandler) enter(id shard.ID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running[id]++
	h.most = max(h.most, h.running[id])
}

func (h *overlapHandler) leave(id shard.ID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running[id]--
}

func (h *overlapHandler) Standby(ctx context.Context, s *worker.StandbyClaim) error {
	h.enter(s.Shard)
	defer h.leave(s.Shard)
	<-ctx.Done()
	h.mu.Lock()
	h.causes = append(h.causes, context.Cause(ctx).Error())
	h.mu.Unlock()
	time.Sleep(time.Minute)
	return nil
}

func (h *overlapHandler) Process(ctx context.Context, c *worker.Claim) error {
	h.enter(c.Shard)
	defer h.leave(c.Shard)
	<-ctx.Done()
	return nil
}

// TestSlowStandbyNeverOverlaps: a standby that stays a minute after its
// context ends is still running when its shard is promoted, revoked and
// listed as standby again, and when the worker steps down: no Process and
// no second standby runs beside it, and the step-down ends the standby
// with ErrStandbyDropped.
func TestSlowStandbyNeverOverlaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 2)
		ctx := t.Context()
		ids := f.shards.IDs()
		sid, err := f.coord.Sessions().Create(ctx, shard.SessionSpec{Worker: "test", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		epoch, _, err := shard.TryLock(ctx, f.coord.Locks(), sid, shard.AssignorLock)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.coord.Fleet().Configure(ctx, f.shards); err != nil {
			t.Fatal(err)
		}
		h := &overlapHandler{running: map[shard.ID]int{}}
		cfg := f.config("a", nil)
		cfg.Handler = h
		f.startWith(cfg)
		assign := func(shards, standby []shard.ID) {
			t.Helper()
			if err := f.coord.Assignments().Assign(ctx, sid, epoch, map[string]*shard.Assignment{"a": {Shards: shards, Standby: standby}}); err != nil {
				t.Fatal(err)
			}
			settle(5 * time.Second)
		}
		assign(nil, ids[:1])
		assign(ids[:1], ids[:1]) // promoted: the standby lingers
		assign(nil, ids[:1])     // revoked, a standby again
		assign(ids[:1], ids[:1]) // promoted again
		assign(nil, ids[:1])
		settle(2 * time.Minute)
		f.running["a"].faults.Set(faults.Fail) // renewals fail: the worker steps down at its deadline
		settle(time.Minute)
		f.running["a"].faults.Set(faults.Healthy)
		f.stop("a")
		settle(2 * time.Minute) // the slow standbys return
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.most != 1 {
			t.Errorf("at most %d runs of one shard at once, want 1", h.most)
		}
		if last := h.causes[len(h.causes)-1]; last != worker.ErrStandbyDropped.Error() {
			t.Errorf("the step-down ended the standby with %q, want %q", last, worker.ErrStandbyDropped)
		}
	})
}

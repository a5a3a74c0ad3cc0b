package admin_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/admin"
)

// drainRefusals: an unknown worker, a dead one, and the last live worker
// not draining are refused, by name, and nothing is written.
func drainRefusals(t *testing.T, e *env) {
	e.twoLiveOneDead()
	ctx := t.Context()
	before := e.snapshot().Index
	for _, tc := range []struct {
		name string
		call func() (admin.Drain, error)
		want error
		msg  string
	}{
		{"drain unknown", func() (admin.Drain, error) { return e.op.Drain(ctx, "nope") }, admin.ErrUnknownWorker, `no worker "nope" in fleet orders (workers: w1, w2, w3)`},
		{"undrain unknown", func() (admin.Drain, error) { return e.op.Undrain(ctx, "nope") }, admin.ErrUnknownWorker, `no worker "nope"`},
		{"drain dead", func() (admin.Drain, error) { return e.op.Drain(ctx, "w3") }, admin.ErrWorkerDead, `worker "w3" is dead`},
		{"undrain dead", func() (admin.Drain, error) { return e.op.Undrain(ctx, "w3") }, admin.ErrWorkerDead, `worker "w3" is dead`},
	} {
		_, err := tc.call()
		refused(t, tc.name, err, tc.want, tc.msg)
	}
	e.unchanged(before, "a refused drain")

	if d, err := e.op.Drain(ctx, "w2"); err != nil || !d.Changed {
		t.Fatalf("drain of w2 = %+v, %v", d, err)
	}
	before = e.snapshot().Index
	if _, err := e.op.Drain(ctx, "w1"); !errors.Is(err, admin.ErrLastWorker) || !strings.Contains(err.Error(), "w1 is the only live worker not draining") {
		t.Errorf("drain of the last worker not draining: %v, want ErrLastWorker", err)
	}
	e.unchanged(before, "a refused drain of the last worker")
}

// drainAndUndrain: the drain is written into the worker's member key under
// its own session, with the shards it owns; asking again writes nothing;
// undrain clears it.
func drainAndUndrain(t *testing.T, e *env) {
	ids := e.configure(6)
	e.join("w1", ids[:3]...)
	w2 := e.join("w2", ids[3:]...)
	ctx := t.Context()
	d, err := e.op.Drain(ctx, "w2")
	if err != nil || !d.Changed || d.Worker != "w2" || d.Session != w2 || !slices.Equal(d.Shards, ids[3:]) {
		t.Fatalf("Drain(w2) = %+v, %v; want changed, session %s, shards %v", d, err, w2, ids[3:])
	}
	s := e.snapshot()
	if m, _ := s.Member("w2"); !m.Draining || m.Session != w2 {
		t.Fatalf("w2's member key after the drain: %+v, want draining under session %s", m, w2)
	}
	if st, _ := s.Shard(ids[3]); st.Session != w2 {
		t.Errorf("the drain moved a shard itself: %+v", st)
	}
	if d, err := e.op.Drain(ctx, "w2"); err != nil || d.Changed {
		t.Errorf("second Drain(w2) = %+v, %v; want nothing changed", d, err)
	}
	e.unchanged(s.Index, "a drain of a draining worker")

	if d, err := e.op.Undrain(ctx, "w2"); err != nil || !d.Changed {
		t.Fatalf("Undrain(w2) = %+v, %v", d, err)
	}
	s = e.snapshot()
	if m, _ := s.Member("w2"); m.Draining || m.Session != w2 {
		t.Errorf("w2's member key after the undrain: %+v", m)
	}
	if d, err := e.op.Undrain(ctx, "w2"); err != nil || d.Changed || len(d.Shards) != 3 {
		t.Errorf("second Undrain(w2) = %+v, %v; want nothing changed, 3 shards owned", d, err)
	}
	e.unchanged(s.Index, "an undrain of a worker not draining")
}

// followDrain: progress is reported as the drained worker's shards move
// to their new owners, and it ends when all have.
func followDrain(t *testing.T, e *env) {
	ids := e.configure(4)
	e.join("w1", ids[:2]...)
	e.join("w2", ids[2:]...)
	d, err := e.op.Drain(t.Context(), "w2")
	if err != nil {
		t.Fatal(err)
	}
	progress := make(chan admin.DrainProgress, 16)
	type result struct {
		p   admin.DrainProgress
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := e.op.FollowDrain(t.Context(), d, func(p admin.DrainProgress) { progress <- p }, nil)
		done <- result{p, err}
	}()

	// A shard released but not taken yet counts as left the worker, not
	// as moved.
	e.release("w2", ids[2])
	waitProgress(t, progress, admin.DrainProgress{Worker: "w2", Left: 1, Moved: 0, Total: 2})
	e.acquire("w1", ids[2])
	waitProgress(t, progress, admin.DrainProgress{Worker: "w2", Left: 1, Moved: 1, Total: 2})
	e.release("w2", ids[3])
	e.acquire("w1", ids[3])
	r := <-done
	if r.err != nil || !r.p.Done() || r.p != (admin.DrainProgress{Worker: "w2", Left: 0, Moved: 2, Total: 2}) {
		t.Fatalf("FollowDrain = %+v, %v; want done with 2/2 moved", r.p, r.err)
	}
}

// waitProgress reads reports until want; they may skip states (watches
// coalesce) but never go back.
func waitProgress(t *testing.T, ch <-chan admin.DrainProgress, want admin.DrainProgress) {
	t.Helper()
	for p := range ch {
		if p.Left < want.Left || p.Moved > want.Moved {
			t.Fatalf("progress %+v went past %+v", p, want)
		}
		if p == want {
			return
		}
	}
}

// followDrainEnds: a withdrawn drain, a worker that leaves, and a context
// that ends each end the wait with their own error.
func followDrainEnds(t *testing.T, e *env) {
	ids := e.configure(4)
	e.join("w1", ids[:2]...)
	e.join("w2", ids[2:]...)
	ctx := t.Context()
	d, err := e.op.Drain(ctx, "w2")
	if err != nil {
		t.Fatal(err)
	}

	// The context ends (a caller's timeout): the drain stays set.
	stop := errors.New("caller gave up")
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	cancel(stop)
	if p, err := e.op.FollowDrain(cctx, d, nil, nil); !errors.Is(err, admin.ErrDrainUnfinished) || !errors.Is(err, stop) || p.Left != 2 {
		t.Errorf("FollowDrain with an ended context = %+v, %v; want ErrDrainUnfinished with its cause, 2 left", p, err)
	}
	if m, _ := e.snapshot().Member("w2"); !m.Draining {
		t.Errorf("the drain did not stay set")
	}

	if _, err := e.op.Undrain(ctx, "w2"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.op.FollowDrain(ctx, d, nil, nil); !errors.Is(err, admin.ErrDrainWithdrawn) {
		t.Errorf("FollowDrain of a withdrawn drain: %v, want ErrDrainWithdrawn", err)
	}

	if d, err = e.op.Drain(ctx, "w2"); err != nil {
		t.Fatal(err)
	}
	e.stop("w2")
	if _, err := e.op.FollowDrain(ctx, d, nil, nil); !errors.Is(err, admin.ErrWorkerLeft) {
		t.Errorf("FollowDrain of a worker that left: %v, want ErrWorkerLeft", err)
	}
}

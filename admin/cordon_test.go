package admin_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/shard"
)

var opsTime = time.Date(2026, 12, 1, 20, 30, 0, 0, time.UTC)

// asOperator gives e's Operator a name and a fixed clock.
func asOperator(e *env, by string) {
	e.op.By = by
	e.op.Now = func() time.Time { return opsTime }
}

// cordonRefusals: an unknown worker, a dead one, the last worker left to
// take shards and an operator without a name are refused, by name, and
// nothing is written.
func cordonRefusals(t *testing.T, e *env) {
	e.twoLiveOneDead()
	ctx := t.Context()
	asOperator(e, "alice")
	before := e.snapshot().Index
	for _, tc := range []struct {
		name string
		call func() (admin.Cordon, error)
		want error
		msg  string
	}{
		{"cordon unknown", func() (admin.Cordon, error) { return e.op.Cordon(ctx, "nope", "") }, admin.ErrUnknownWorker, `no worker "nope" in fleet orders (workers: w1, w2, w3)`},
		{"uncordon unknown", func() (admin.Cordon, error) { return e.op.Uncordon(ctx, "nope") }, admin.ErrUnknownWorker, `no worker "nope"`},
		{"cordon dead", func() (admin.Cordon, error) { return e.op.Cordon(ctx, "w3", "") }, admin.ErrWorkerDead, `worker "w3" is dead`},
		{"uncordon dead", func() (admin.Cordon, error) { return e.op.Uncordon(ctx, "w3") }, admin.ErrWorkerDead, `nothing to cordon`},
		{"cordon anonymous", func() (admin.Cordon, error) {
			op := e.op
			op.By = ""
			return op.Cordon(ctx, "w1", "")
		}, admin.ErrNoOperator, "cordon of w1"},
	} {
		_, err := tc.call()
		refused(t, tc.name, err, tc.want, tc.msg)
	}
	e.unchanged(before, "a refused cordon")

	if c, err := e.op.Cordon(ctx, "w2", ""); err != nil || !c.Changed {
		t.Fatalf("cordon of w2 = %+v, %v", c, err)
	}
	before = e.snapshot().Index
	if _, err := e.op.Cordon(ctx, "w1", ""); !errors.Is(err, admin.ErrLastUncordoned) || !strings.Contains(err.Error(), "w1 is the only live worker neither cordoned nor draining") {
		t.Errorf("cordon of the last worker taking shards: %v, want ErrLastUncordoned", err)
	}
	e.unchanged(before, "a refused cordon of the last worker")
	// Nor may the last worker left to take shards be drained.
	if _, err := e.op.Drain(ctx, "w1"); !errors.Is(err, admin.ErrLastWorker) || !strings.Contains(err.Error(), "every live worker but w1 is cordoned or draining") {
		t.Errorf("drain of the last worker not cordoned: %v, want ErrLastWorker", err)
	}
	e.unchanged(before, "a refused drain of the last worker not cordoned")
	// A draining worker takes nothing either.
	if _, err := e.op.Uncordon(ctx, "w2"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.op.Drain(ctx, "w2"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.op.Cordon(ctx, "w1", ""); !errors.Is(err, admin.ErrLastUncordoned) {
		t.Errorf("cordon of the only worker not draining: %v, want ErrLastUncordoned", err)
	}
}

// cordonAndUncordon: the cordon is written into the worker's member key
// under its own session with who, when and why; asking again writes
// nothing and reports the cordon in force; uncordon clears it.
func cordonAndUncordon(t *testing.T, e *env) {
	ids := e.configure(6)
	e.join("w1", ids[:3]...)
	w2 := e.join("w2", ids[3:]...)
	ctx := t.Context()
	asOperator(e, "alice@ops")
	want := shard.Mark{By: "alice@ops", At: opsTime, Reason: "bad disk"}
	c, err := e.op.Cordon(ctx, "w2", "bad disk")
	if err != nil || !c.Changed || c.Session != w2 || c.Shards != 3 || c.Mark == nil || *c.Mark != want {
		t.Fatalf("Cordon(w2) = %+v, %v; want changed, session %s, 3 shards, mark %+v", c, err, w2, want)
	}
	s := e.snapshot()
	m, _ := s.Member("w2")
	if m.Cordon == nil || !m.Cordon.At.Equal(want.At) || m.Cordon.By != want.By || m.Cordon.Reason != want.Reason || m.Session != w2 || m.Draining {
		t.Fatalf("w2's member key after the cordon: %+v (cordon %+v), want cordoned by %+v under session %s", m, m.Cordon, want, w2)
	}
	if st, _ := s.Shard(ids[3]); st.Session != w2 {
		t.Errorf("the cordon moved a shard: %+v", st)
	}

	asOperator(e, "bob")
	if c, err := e.op.Cordon(ctx, "w2", "again"); err != nil || c.Changed || c.Mark == nil || c.Mark.By != "alice@ops" {
		t.Errorf("second Cordon(w2) = %+v, %v; want nothing changed, alice's cordon reported", c, err)
	}
	e.unchanged(s.Index, "a cordon of a cordoned worker")

	if c, err := e.op.Uncordon(ctx, "w2"); err != nil || !c.Changed || c.Mark != nil {
		t.Fatalf("Uncordon(w2) = %+v, %v", c, err)
	}
	s = e.snapshot()
	if m, _ := s.Member("w2"); m.Cordon != nil || m.Session != w2 {
		t.Errorf("w2's member key after the uncordon: %+v", m)
	}
	if c, err := e.op.Uncordon(ctx, "w2"); err != nil || c.Changed {
		t.Errorf("second Uncordon(w2) = %+v, %v; want nothing changed", c, err)
	}
	e.unchanged(s.Index, "an uncordon of a worker not cordoned")
}

// freezeAndUnfreeze: a freeze records who, when and why in the fleet's
// key, read back by another coordinator's listing; freezing again writes
// nothing and names the freeze in force; unfreeze lifts it, and again
// writes nothing.
func freezeAndUnfreeze(t *testing.T, e *env) {
	ids := e.configure(2)
	e.join("w1", ids...)
	ctx := t.Context()

	if _, err := e.op.Freeze(ctx, "x"); !errors.Is(err, admin.ErrNoOperator) {
		t.Errorf("freeze without a name: %v, want ErrNoOperator", err)
	}
	before := e.snapshot().Index
	if f, err := e.op.Unfreeze(ctx); err != nil || f.Changed || f.Mark != nil {
		t.Errorf("Unfreeze of a fleet not frozen = %+v, %v; want nothing changed", f, err)
	}
	e.unchanged(before, "an unfreeze of a fleet not frozen")

	asOperator(e, "carol")
	want := shard.Mark{By: "carol", At: opsTime, Reason: "incident 42"}
	f, err := e.op.Freeze(ctx, "incident 42")
	if err != nil || !f.Changed || f.Mark == nil || *f.Mark != want {
		t.Fatalf("Freeze = %+v, %v; want changed with %+v", f, err, want)
	}
	// The workers' coordinator (the assignor's) reads the freeze too.
	s, err := e.coord.Fleet().Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Freeze == nil || s.Freeze.By != want.By || !s.Freeze.At.Equal(want.At) || s.Freeze.Reason != want.Reason {
		t.Fatalf("the fleet's freeze as listed: %+v, want %+v", s.Freeze, want)
	}

	asOperator(e, "dave")
	before = e.snapshot().Index
	if f, err := e.op.Freeze(ctx, "again"); err != nil || f.Changed || f.Mark == nil || f.Mark.By != "carol" || f.Mark.Reason != "incident 42" {
		t.Errorf("second Freeze = %+v, %v; want nothing changed, carol's freeze reported", f, err)
	}
	e.unchanged(before, "a freeze of a frozen fleet")

	if f, err := e.op.Unfreeze(ctx); err != nil || !f.Changed || f.Mark == nil || f.Mark.By != "carol" {
		t.Fatalf("Unfreeze = %+v, %v; want changed, lifting carol's freeze", f, err)
	}
	if s := e.snapshot(); s.Freeze != nil {
		t.Errorf("freeze still listed after Unfreeze: %+v", s.Freeze)
	}
}

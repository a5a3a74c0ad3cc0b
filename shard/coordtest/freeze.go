package coordtest

import (
	"errors"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// freeze: SetFreeze writes P/freeze without a session, so a snapshot shows
// it (who, when, why) after the session of whoever set it is gone, and a
// watch wakes for it; SetFreeze(nil) deletes it, twice without error; a
// mark without By is refused before anything is written.
func (s *suite) freeze(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	configure(t, c, 4)
	if f := snapshot(t, c).Freeze; f != nil {
		t.Fatalf("a new fleet's snapshot has Freeze %+v, want nil", *f)
	}
	op := session(t, c, "operator", long, 0)
	mark := shard.Mark{By: "alice@host", At: time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC), Reason: "incident 42"}
	before := snapshot(t, c).Index
	if err := c.Fleet().SetFreeze(ctx, &mark); err != nil {
		t.Fatalf("SetFreeze(%+v): %v", mark, err)
	}
	destroy(t, c, op)
	snap, err := c.Fleet().Watch(ctx, before)
	if err != nil {
		t.Fatalf("Watch(%d) after SetFreeze: %v", before, err)
	}
	if snap.Freeze == nil || snap.Freeze.By != mark.By || !snap.Freeze.At.Equal(mark.At) || snap.Freeze.Reason != mark.Reason {
		t.Fatalf("snapshot Freeze = %+v, want %+v", snap.Freeze, mark)
	}
	if len(snap.Problems) > 0 {
		t.Fatalf("a freeze is reported as a problem: %q", snap.Problems)
	}
	for range 2 {
		if err := c.Fleet().SetFreeze(ctx, nil); err != nil {
			t.Fatalf("SetFreeze(nil): %v", err)
		}
		if f := snapshot(t, c).Freeze; f != nil {
			t.Fatalf("after SetFreeze(nil) the snapshot has Freeze %+v, want nil", *f)
		}
	}
	if err := c.Fleet().SetFreeze(ctx, &shard.Mark{At: mark.At}); !errors.Is(err, shard.ErrInvalidArgument) {
		t.Fatalf("SetFreeze(mark without by) = %v, want ErrInvalidArgument", err)
	}
	if f := snapshot(t, c).Freeze; f != nil {
		t.Fatalf("a refused SetFreeze wrote %+v", *f)
	}
}

// memberMarks: a member's Cordon and RejoinUntil are stored as written, shown in snapshots and to Members.Watch, and kept on the key
// after its session ends (the assignor reads RejoinUntil from the dead
// key).
func (s *suite) memberMarks(t *testing.T) {
	c := s.open(t)
	a := session(t, c, "w-a", long, 0)
	until := time.Now().Add(time.Hour).Truncate(time.Millisecond).UTC()
	cordon := &shard.Mark{By: "bob", At: until.Add(-time.Hour), Reason: "sick disk"}
	join(t, c, a, shard.Member{ID: "w-a", Weight: 1, Cordon: cordon, RejoinUntil: until})
	destroy(t, c, a)
	m, ok := snapshot(t, c).Member("w-a")
	if !ok || m.Live() || m.Cordon == nil || m.Cordon.By != cordon.By || !m.Cordon.At.Equal(cordon.At) || m.Cordon.Reason != cordon.Reason ||
		!m.RejoinUntil.Equal(until) {
		t.Fatalf("snapshot member w-a = %+v (present %v), want a dead key with cordon %+v and rejoin-until %v", m, ok, *cordon, until)
	}
	if !m.Returning(until.Add(-time.Second)) || m.Returning(until) {
		t.Fatalf("Returning around %v is wrong for %+v", until, m.Member)
	}
	k, err := c.Members().Watch(t.Context(), "w-a", 0)
	if err != nil || !k.Exists || k.Member.Cordon == nil || !k.Member.RejoinUntil.Equal(until) {
		t.Fatalf("WatchMember(w-a, 0) = %+v, %v; want cordon and rejoin-until kept", k, err)
	}
}

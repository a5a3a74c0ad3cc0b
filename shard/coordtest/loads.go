package coordtest

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// reportLoad: a ReportLoad shows in the next snapshot as the member's
// Load, and does not touch the member key: its index (what Members.Watch
// follows) and an operator's cordon on it are as they were. The member
// key itself never carries loads (Join drops them), Members.Watch shows
// none, and ShardLoads counts the figures of shards the member holds.
func (s *suite) reportLoad(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	configure(t, c, 4)
	a := session(t, c, "w-a", long, 0)
	cordon := &shard.Mark{By: "ops", At: time.Now().Truncate(time.Millisecond).UTC(), Reason: "disk"}
	join(t, c, a, shard.Member{ID: "w-a", Weight: 1, Load: map[shard.ID]float64{"stream/shard-003": 99}})
	acquire(t, c, a, "stream/shard-000", "stream/shard-001")
	// The operator's cordon, as admin writes it: the worker's own session.
	join(t, c, a, shard.Member{ID: "w-a", Weight: 1, Cordon: cordon})
	before, err := c.Members().Watch(ctx, "w-a", 0)
	if err != nil || !before.Exists {
		t.Fatalf("WatchMember(w-a, 0) = %+v, %v", before, err)
	}
	if m, _ := snapshot(t, c).Member("w-a"); m.Load != nil {
		t.Fatalf("member w-a's Load before any ReportLoad: %v, want none (Join does not write loads)", m.Load)
	}

	load := map[shard.ID]float64{"stream/shard-000": 12.5, "stream/shard-001": 0.0125}
	idx := snapshot(t, c).Index
	if err := c.Members().ReportLoad(ctx, a, "w-a", load); err != nil {
		t.Fatalf("ReportLoad(%s, w-a, %v): %v", a, load, err)
	}
	snap := waitFor(t, c, s.o.timing.Slack, "the loads in a snapshot", func(sn shard.Snapshot) bool {
		m, _ := sn.Member("w-a")
		return sn.Index > idx && maps.Equal(m.Load, load)
	})
	m, _ := snap.Member("w-a")
	if m.Cordon == nil || m.Cordon.By != "ops" || !m.Live() || m.Session != a {
		t.Fatalf("member w-a after ReportLoad: %+v, want it live under %s with the operator's cordon", m, a)
	}
	if got := snap.ShardLoads(); len(got) != 2 || got["stream/shard-000"] != 12.5 {
		t.Fatalf("ShardLoads = %v, want the two held shards' figures", got)
	}
	after, err := c.Members().Watch(ctx, "w-a", 0)
	if err != nil || after.Index != before.Index || after.Member.Cordon == nil || after.Member.Load != nil {
		t.Fatalf("member key after ReportLoad: %+v, %v; want it unchanged (index %d, the cordon, no loads)", after, err, before.Index)
	}
	if err := c.Members().ReportLoad(ctx, a, "w-a", nil); err != nil {
		t.Fatalf("ReportLoad(%s, w-a, nil): %v", a, err)
	}
	if m, _ := snapshot(t, c).Member("w-a"); len(m.Load) != 0 {
		t.Fatalf("member w-a's Load after a report of nothing: %v, want none", m.Load)
	}
}

// reportLoadRefused: ReportLoad with a session that is not the worker's
// live member session writes nothing: another live session, or a worker
// whose member key is missing, gets shard.ErrNotMember; a gone session
// shard.ErrSessionInvalid. Bad arguments are refused before any write.
func (s *suite) reportLoadRefused(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	configure(t, c, 4)
	a := session(t, c, "w-a", long, 0)
	b := session(t, c, "w-b", long, 0)
	join(t, c, a, shard.Member{ID: "w-a", Weight: 1})
	load := map[shard.ID]float64{"stream/shard-000": 1}
	idx := snapshot(t, c).Index
	cases := []struct {
		name   string
		id     shard.SessionID
		worker string
		load   map[shard.ID]float64
		want   error
		names  string
	}{
		{"another live session", b, "w-a", load, shard.ErrNotMember, string(a)},
		{"no member key", a, "w-nobody", load, shard.ErrNotMember, "w-nobody"},
		{"empty worker", a, "", load, shard.ErrInvalidArgument, "worker"},
		{"negative load", a, "w-a", map[shard.ID]float64{"stream/shard-000": -1}, shard.ErrInvalidArgument, "-1"},
		{"unknown shard", a, "w-a", map[shard.ID]float64{"stream/shard-999": 1}, shard.ErrUnknownShard, "stream/shard-999"},
	}
	for _, tc := range cases {
		err := c.Members().ReportLoad(ctx, tc.id, tc.worker, tc.load)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.names) {
			t.Errorf("%s: ReportLoad(%s, %q, %v) = %v; want %v naming %q", tc.name, tc.id, tc.worker, tc.load, err, tc.want, tc.names)
		}
	}
	noWrite(t, c, idx, quiet, "refused ReportLoads")
	destroy(t, c, a)
	if err := c.Members().ReportLoad(ctx, a, "w-a", load); !errors.Is(err, shard.ErrSessionInvalid) {
		t.Errorf("ReportLoad with a destroyed session = %v, want ErrSessionInvalid", err)
	}
}

// deadWorkerLoads: a worker's figures die with its session: a dead member
// shows no Load and ShardLoads counts none of them; a new session of the
// same worker ID starts with none until it reports. A member key that
// carries "load" itself (a hand edit) is not read as loads: only the
// loads key counts.
func (s *suite) deadWorkerLoads(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	configure(t, c, 4)
	a := session(t, c, "w-a", long, 0)
	join(t, c, a, shard.Member{ID: "w-a", Weight: 1})
	acquire(t, c, a, "stream/shard-000")
	if err := c.Members().ReportLoad(ctx, a, "w-a", map[shard.ID]float64{"stream/shard-000": 7}); err != nil {
		t.Fatalf("ReportLoad: %v", err)
	}
	destroy(t, c, a)
	snap := snapshot(t, c)
	if m, ok := snap.Member("w-a"); !ok || m.Live() || m.Load != nil {
		t.Fatalf("dead member w-a: %+v (present %v), want it dead without loads", m, ok)
	}
	if got := snap.ShardLoads(); len(got) != 0 {
		t.Fatalf("ShardLoads with the only worker dead = %v, want none", got)
	}

	a2 := session(t, c, "w-a", long, 0)
	join(t, c, a2, shard.Member{ID: "w-a", Weight: 1})
	if m, _ := snapshot(t, c).Member("w-a"); m.Load != nil {
		t.Fatalf("w-a under a new session before it reports: Load %v, want none (the old session's figures are dead)", m.Load)
	}
	// A member key carrying loads itself, written by hand.
	s.o.operator.PutMember(t, c, shard.Member{ID: "w-a", Weight: 1, Load: map[shard.ID]float64{"stream/shard-000": 3}})
	if m, _ := snapshot(t, c).Member("w-a"); m.Load != nil || m.Session != a2 {
		t.Fatalf("a member key carrying \"load\": %+v, want no loads read from it, still held by %s", m, a2)
	}
	if err := c.Members().ReportLoad(ctx, a2, "w-a", map[shard.ID]float64{"stream/shard-000": 5}); err != nil {
		t.Fatalf("ReportLoad: %v", err)
	}
	if m, _ := snapshot(t, c).Member("w-a"); m.Load["stream/shard-000"] != 5 {
		t.Fatalf("a member key carrying \"load\" and a loads key: Load %v, want the loads key's (5)", m.Load)
	}
}

// reportLoadSize: a worker of 10,000 shards with figures of three
// significant digits fits in one loads key; loads over shard.MaxLoadBytes
// are refused, naming the limit, before anything is written.
func (s *suite) reportLoadSize(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	cfg := configure(t, c, 10000)
	a := session(t, c, "w-a", long, 0)
	join(t, c, a, shard.Member{ID: "w-a", Weight: 1})
	load := make(map[shard.ID]float64, cfg.Shards)
	huge := make(map[shard.ID]float64, cfg.Shards)
	for i, id := range cfg.IDs() {
		load[id] = float64(100+i%900) * 1.01 // three digits, e.g. 1009.99 -> "1009.99"
		huge[id] = 1.2345678901234567e+300
	}
	if err := c.Members().ReportLoad(ctx, a, "w-a", load); err != nil {
		t.Fatalf("ReportLoad of %d shards: %v", len(load), err)
	}
	if m, _ := snapshot(t, c).Member("w-a"); len(m.Load) != len(load) {
		t.Fatalf("snapshot shows %d of %d shards' loads", len(m.Load), len(load))
	}
	idx := snapshot(t, c).Index
	err := c.Members().ReportLoad(ctx, a, "w-a", huge)
	if !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), fmt.Sprint(shard.MaxLoadBytes)) {
		t.Fatalf("ReportLoad of %d long figures = %v, want ErrInvalidArgument naming the limit %d", len(huge), err, shard.MaxLoadBytes)
	}
	noWrite(t, c, idx, quiet, "a refused ReportLoad")
}

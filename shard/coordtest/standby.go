package coordtest

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// reportStandby: a ReportStandby shows in the next snapshot as the
// member's Standby, beside its Load, without touching the member key; a
// member key carrying "standby" itself (a hand edit) is not read; a
// report of nothing deletes the key; the states die with the session.
// Reports from another session, for an unknown shard or with an applied
// offset below -1 write nothing.
func (s *suite) reportStandby(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	configure(t, c, 4)
	a := session(t, c, "w-a", long, 0)
	b := session(t, c, "w-b", long, 0)
	join(t, c, a, shard.Member{ID: "w-a", Weight: 1, StandbyCapable: true,
		Standby: map[shard.ID]shard.StandbyState{"stream/shard-003": {Applied: 9, Ready: true}}})
	if m, _ := snapshot(t, c).Member("w-a"); m.Standby != nil || !m.StandbyCapable {
		t.Fatalf("member w-a before any ReportStandby: %+v, want no standby states (Join does not write them) and capable", m)
	}
	before, err := c.Members().Watch(ctx, "w-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	states := map[shard.ID]shard.StandbyState{"stream/shard-000": {Applied: 41, Ready: true}, "stream/shard-001": {Applied: -1}}
	load := map[shard.ID]float64{"stream/shard-002": 3}
	if err := c.Members().ReportLoad(ctx, a, "w-a", load); err != nil {
		t.Fatalf("ReportLoad: %v", err)
	}
	if err := c.Members().ReportStandby(ctx, a, "w-a", states); err != nil {
		t.Fatalf("ReportStandby(%s, w-a, %v): %v", a, states, err)
	}
	snap := waitFor(t, c, s.o.timing.Slack, "the standby states in a snapshot", func(sn shard.Snapshot) bool {
		m, _ := sn.Member("w-a")
		return maps.Equal(m.Standby, states)
	})
	if m, _ := snap.Member("w-a"); !maps.Equal(m.Load, load) {
		t.Fatalf("member w-a's Load beside its standbys: %v, want %v", m.Load, load)
	}
	after, err := c.Members().Watch(ctx, "w-a", 0)
	if err != nil || after.Index != before.Index || after.Member.Standby != nil {
		t.Fatalf("member key after ReportStandby: %+v, %v; want it unchanged (index %d, no standby states)", after, err, before.Index)
	}

	idx := snapshot(t, c).Index
	refused := []struct {
		name   string
		id     shard.SessionID
		states map[shard.ID]shard.StandbyState
		want   error
		names  string
	}{
		{"another live session", b, states, shard.ErrNotMember, string(a)},
		{"applied below -1", a, map[shard.ID]shard.StandbyState{"stream/shard-000": {Applied: -2}}, shard.ErrInvalidArgument, "-2"},
		{"unknown shard", a, map[shard.ID]shard.StandbyState{"stream/shard-999": {}}, shard.ErrUnknownShard, "stream/shard-999"},
	}
	for _, tc := range refused {
		err := c.Members().ReportStandby(ctx, tc.id, "w-a", tc.states)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.names) {
			t.Errorf("%s: ReportStandby = %v; want %v naming %q", tc.name, err, tc.want, tc.names)
		}
	}
	noWrite(t, c, idx, quiet, "refused ReportStandbys")
	if m, _ := snapshot(t, c).Member("w-a"); !maps.Equal(m.Standby, states) {
		t.Fatalf("member w-a's standbys after refused reports: %v, want %v", m.Standby, states)
	}

	if err := c.Members().ReportStandby(ctx, a, "w-a", nil); err != nil {
		t.Fatalf("ReportStandby of nothing: %v", err)
	}
	if m, _ := snapshot(t, c).Member("w-a"); m.Standby != nil {
		t.Fatalf("member w-a's standbys after a report of nothing: %v, want none (the key deleted)", m.Standby)
	}
	if err := c.Members().ReportStandby(ctx, a, "w-a", states); err != nil {
		t.Fatal(err)
	}

	destroy(t, c, a)
	if m, _ := snapshot(t, c).Member("w-a"); m.Live() || m.Standby != nil || m.Load != nil {
		t.Fatalf("dead member w-a: %+v, want it dead without standby states or loads", m)
	}
	if err := c.Members().ReportStandby(ctx, a, "w-a", states); !errors.Is(err, shard.ErrSessionInvalid) {
		t.Errorf("ReportStandby with a destroyed session = %v, want ErrSessionInvalid", err)
	}
}

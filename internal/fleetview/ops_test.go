package fleetview

import (
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// opsFixture: six shards; a holds 0–3, b holds 4, c (dead, restarting
// until t0+30s) had 5 and its key still lists it. Every live worker's key
// lists what it holds.
func opsFixture() shard.Snapshot {
	cfg := shard.Config{Shards: 6}.Normalize()
	ids := cfg.IDs()
	c := member("c", "", false)
	c.RejoinUntil = t0.Add(30 * time.Second)
	s := shard.Snapshot{Index: 20, Config: &cfg,
		Members: []shard.MemberState{member("a", "s-a", false), member("b", "s-b", false), c},
		Assignments: map[string]shard.Assignment{
			"a": {Shards: ids[:4]}, "b": {Shards: ids[4:5]}, "c": {Shards: ids[5:]},
		}}
	for i, id := range ids[:4] {
		s.Shards = append(s.Shards, held(id, "s-a", shard.Token(i+1), "a", initial))
	}
	s.Shards = append(s.Shards, held(ids[4], "s-b", 5, "b", initial), held(ids[5], "", 6, "c", initial))
	return s
}

func TestOperatorStates(t *testing.T) {
	mark := shard.Mark{By: "alice@ops", At: t0.Add(-time.Minute), Reason: "sick disk"}
	s := opsFixture()
	s.Members[0].Cordon = &mark
	s.Freeze = &shard.Mark{By: "bob", At: t0.Add(-2 * time.Minute), Reason: "incident 7"}
	f := Build(Input{Snapshot: s, Now: t0, MaxMovesInFlight: 16})

	if f.Freeze == nil || *f.Freeze != *s.Freeze {
		t.Errorf("freeze %+v, want %+v", f.Freeze, s.Freeze)
	}
	a, _ := f.Worker("a")
	if a.Cordon == nil || *a.Cordon != mark || a.State != WorkerLive {
		t.Errorf("a = %+v, want live and cordoned by %+v", a, mark)
	}
	c, _ := f.Worker("c")
	if !c.Returning || !c.RejoinUntil.Equal(t0.Add(30*time.Second)) || c.State != WorkerDead {
		t.Errorf("c = %+v, want dead and returning until t0+30s", c)
	}
	if f.Summary.Cordoned != 1 || f.Summary.Returning != 1 {
		t.Errorf("summary %+v, want 1 cordoned, 1 returning", f.Summary)
	}
	// a keeps its four shards while cordoned; c's shard waits for it.
	if f.Queue != (Queue{Budget: 16}) {
		t.Errorf("queue %+v, want nothing queued, budget 16", f.Queue)
	}

	later := Build(Input{Snapshot: s, Now: t0.Add(30 * time.Second)})
	if c, _ := later.Worker("c"); c.Returning || later.Summary.Returning != 0 {
		t.Errorf("at the end of its grace c = %+v, summary %+v; want not returning", c, later.Summary)
	}
	if later.Queue.Budget != 0 {
		t.Errorf("budget %d shown without one being known", later.Queue.Budget)
	}
}

func TestQueue(t *testing.T) {
	ids := opsFixture().Config.IDs()
	for _, tc := range []struct {
		name string
		edit func(s *shard.Snapshot)
		want Queue
	}{
		// a holds 4 of the 5 shards c does not reserve: one must move to b.
		{"one wanted", func(*shard.Snapshot) {}, Queue{Queued: 1}},
		{"frozen waits the same", func(s *shard.Snapshot) { s.Freeze = &shard.Mark{By: "bob"} }, Queue{Queued: 1}},
		{"handed off is in flight", func(s *shard.Snapshot) {
			s.Assignments["a"] = shard.Assignment{Shards: ids[:2]}
			s.Assignments["b"] = shard.Assignment{Shards: ids[4:5]}
		}, Queue{InFlight: 2, Queued: 0}},
		{"cordoned keeps", func(s *shard.Snapshot) { s.Members[0].Cordon = &shard.Mark{By: "x"} }, Queue{}},
		// With every live worker cordoned the assignor's step ignores the
		// cordons, as it must place shards somewhere: it balances counts.
		{"every taker cordoned", func(s *shard.Snapshot) {
			s.Members[0].Cordon = &shard.Mark{By: "x"}
			s.Members[1].Cordon = &shard.Mark{By: "x"}
		}, Queue{Queued: 1}},
		{"draining gives all", func(s *shard.Snapshot) { s.Members[0].Draining = true }, Queue{Queued: 4}},
		{"grace over", func(s *shard.Snapshot) { s.Members[2].RejoinUntil = t0 }, Queue{Queued: 1}},
		// With loads the assignor's step weighs loads, not counts: b's one
		// shard weighs more than a's four, alone it pins b above the band,
		// and a is alone in it: nothing to move.
		{"balancing load", func(s *shard.Snapshot) {
			s.Members[0].Load = map[shard.ID]float64{ids[0]: 1, ids[1]: 1, ids[2]: 1, ids[3]: 1}
			s.Members[1].Load = map[shard.ID]float64{ids[4]: 10}
		}, Queue{}},
		{"a dead worker's key does not count", func(s *shard.Snapshot) {
			s.Assignments["gone"] = shard.Assignment{Shards: ids[5:]}
		}, Queue{Queued: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := opsFixture()
			tc.edit(&s)
			if got := Build(Input{Snapshot: s, Now: t0}).Queue; got != tc.want {
				t.Errorf("queue %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestOperatorEvents: a cordon set and lifted under one session and the
// fleet's freeze set and lifted are events saying who and why; a cordon a
// rejoining worker carries over is not a new one.
func TestOperatorEvents(t *testing.T) {
	base := opsFixture()
	cordoned := opsFixture()
	cordoned.Members[0].Cordon = &shard.Mark{By: "alice", Reason: "bad disk"}
	cordoned.Freeze = &shard.Mark{By: "carol", Reason: "incident 42"}
	for _, tc := range []struct {
		name       string
		prev, next shard.Snapshot
		want       []string
	}{
		{"set", base, cordoned, []string{"worker a cordoned: given nothing new, keeps what it has: by alice: bad disk",
			"fleet frozen: no rebalancing moves, only failover: by carol: incident 42"}},
		{"lifted", cordoned, base, []string{"worker a uncordoned: cordon lifted: it is given a share again",
			"fleet unfrozen: rebalancing resumes within the move budget"}},
		{"carried over a rejoin", base, func() shard.Snapshot {
			s := opsFixture()
			s.Members[0].Session, s.Members[0].Cordon = "s-a2", &shard.Mark{By: "alice"}
			return s
		}(), []string{"worker a joined: new session s-a2, version v1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range Diff(&tc.prev, tc.next, t0) {
				if e.Shard == "" {
					got = append(got, e.String())
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

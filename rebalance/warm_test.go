package rebalance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// warmFleet is a fleet whose members run standbys: each member runs one
// for every shard its key lists as standby and it does not hold, ready
// readyAfter after it started; it reports them as Member.Standbys. It
// counts the shards members took with a ready standby (warm) and without
// one while a warm move to them was under way (cold).
type warmFleet struct {
	*fleet
	readyAfter time.Duration
	started    map[string]map[shard.ID]time.Time // by member, when each standby started
	warm, cold int
}

func newWarmFleet(r *rand.Rand, w, n int, readyAfter time.Duration) *warmFleet {
	f := &warmFleet{fleet: newFleet(r, 0, n), readyAfter: readyAfter, started: map[string]map[shard.ID]time.Time{}}
	for k := range w {
		f.join(Member{ID: fmt.Sprintf("w%02d", k), Weight: 1, Standby: true})
	}
	return f
}

// act runs the standbys the keys list, then lets the workers act, and
// counts each shard taken by a member that had been listed its standby.
func (f *warmFleet) act() {
	before := slices.Clone(f.s.Holders)
	f.runStandbys()
	f.fleet.act()
	for i, h := range f.s.Holders {
		if h == "" || h == before[i] {
			continue
		}
		id := f.s.Shards[i]
		if st, ok := f.reported(h)[id]; ok {
			if st.Ready {
				f.warm++
			} else {
				f.cold++
			}
		}
	}
	f.runStandbys()
}

// reported is member id's standby report.
func (f *warmFleet) reported(id string) map[shard.ID]shard.StandbyState {
	for _, m := range f.s.Members {
		if m.ID == id {
			return m.Standbys
		}
	}
	return nil
}

// runStandbys starts and ends the members' standbys as their keys say, and
// writes their reports.
func (f *warmFleet) runStandbys() {
	for k := range f.s.Members {
		m := &f.s.Members[k]
		if !m.Standby {
			continue
		}
		run := map[shard.ID]time.Time{}
		for _, id := range f.s.Assigned[m.ID].Standby {
			if f.holder(id) == m.ID {
				continue
			}
			at, ok := f.started[m.ID][id]
			if !ok {
				at = f.s.Now
			}
			run[id] = at
		}
		f.started[m.ID] = run
		m.Standbys = map[shard.ID]shard.StandbyState{}
		for id, at := range run {
			m.Standbys[id] = shard.StandbyState{Applied: 0, Ready: !f.s.Now.Before(at.Add(f.readyAfter))}
		}
	}
}

// round steps, checks, applies and acts once, then advances the clock.
func (f *warmFleet) round(t *testing.T, p Policy, tick time.Duration) Decision {
	t.Helper()
	d, err := f.step(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkWarm(f.s, d); err != nil {
		t.Fatalf("at %v: %v", f.s.Now, err)
	}
	f.apply(d)
	f.act()
	f.s.Now = f.s.Now.Add(tick)
	return d
}

// checkWarm checks what a decision says of warm moves: a shard preparing
// stays in its holder's key and is listed as its target's standby with a
// start no later than now; a standby is never listed to a member that
// holds the shard or runs no standbys.
func checkWarm(s State, d Decision) error {
	keys := func(w string) Assignment {
		if a, ok := d.Assign[w]; ok {
			return a
		}
		return s.Assigned[w]
	}
	capable := map[string]bool{}
	for _, m := range s.Members {
		capable[m.ID] = m.Standby
	}
	for _, p := range d.Preparing {
		if !slices.Contains(keys(p.From).Shards, p.Shard) {
			return fmt.Errorf("%s prepares to move from %s to %s, but %s's key no longer lists it", p.Shard, p.From, p.To, p.From)
		}
		to := keys(p.To)
		since, ok := to.Preparing[p.Shard]
		if _, listed := slices.BinarySearch(to.Standby, p.Shard); !listed || !ok || since.After(s.Now) {
			return fmt.Errorf("%s prepares to move to %s, whose key lists standbys %v preparing %v", p.Shard, p.To, to.Standby, to.Preparing)
		}
	}
	holders := map[shard.ID]string{}
	for i, h := range s.Holders {
		holders[s.Shards[i]] = h
	}
	for _, m := range s.Members {
		for _, id := range keys(m.ID).Standby {
			if !capable[m.ID] || holders[id] == m.ID {
				return fmt.Errorf("%s's key lists %s as a standby, but it holds it or runs no standbys (capable %v)", m.ID, id, capable[m.ID])
			}
		}
	}
	return nil
}

// TestWarmJoin: a member joining a fleet that runs standbys gets its
// share as standbys first; nothing is handed off while they prepare, and
// a step on the state written decides nothing more but a wake-up at the
// prepare timeout. As they get ready the shards move, each taken warm;
// at rest no key lists a standby.
func TestWarmJoin(t *testing.T) {
	f := newWarmFleet(rand.New(rand.NewPCG(1, 2)), 3, 60, 5*time.Second)
	p := Policy{PrepareTimeout: time.Minute}
	if _, _, err := f.settle(p, time.Second, 50, nil); err != nil {
		t.Fatal(err)
	}
	f.join(Member{ID: "w03", Weight: 1, Standby: true})
	start := f.s.Now
	d := f.round(t, p, time.Second)
	if len(d.Preparing) != 15 || len(d.Moves) != 0 || len(d.Cold) != 0 {
		t.Fatalf("the join's first step: %d preparing, moves %v, cold %v; want 15 preparing and nothing handed off", len(d.Preparing), d.Moves, d.Cold)
	}
	if !d.Wake.Equal(start.Add(time.Minute)) {
		t.Fatalf("wake %v, want the prepare timeout, %v", d.Wake, start.Add(time.Minute))
	}
	for _, mv := range d.Preparing {
		if mv.To != "w03" || mv.Reason != shard.ReasonRebalance {
			t.Fatalf("preparing %+v, want a rebalance to w03", mv)
		}
	}
	again, err := f.step(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Assign) != 0 || len(again.Moves) != 0 || len(again.Preparing) != 15 || !again.Wake.Equal(d.Wake) {
		t.Fatalf("a step on the keys written: assign %v, moves %v, %d preparing, wake %v; want nothing new (a fixed point)", again.Assign, again.Moves, len(again.Preparing), again.Wake)
	}
	for range 30 {
		f.round(t, p, time.Second)
	}
	if !f.settled() || f.warm != 15 || f.cold != 0 {
		t.Fatalf("after 30 s: settled %v, %d taken warm, %d cold; want 15 warm", f.settled(), f.warm, f.cold)
	}
	for w, a := range f.s.Assigned {
		if len(a.Standby) != 0 || len(a.Preparing) != 0 {
			t.Fatalf("at rest %s's key lists standbys %v preparing %v", w, a.Standby, a.Preparing)
		}
	}
}

// TestWarmMoveTimesOut: a standby that never gets ready holds its move
// back for PrepareTimeout, then the move is made cold and said so.
func TestWarmMoveTimesOut(t *testing.T) {
	f := newWarmFleet(rand.New(rand.NewPCG(3, 4)), 2, 8, time.Hour)
	p := Policy{PrepareTimeout: 10 * time.Second}
	if _, _, err := f.settle(p, time.Second, 50, nil); err != nil {
		t.Fatal(err)
	}
	f.join(Member{ID: "w02", Weight: 1, Standby: true})
	var cold []Transfer
	first := f.s.Now
	for range 30 {
		d := f.round(t, p, time.Second)
		if len(d.Cold) > 0 && len(cold) == 0 && f.s.Now.Sub(first) < 11*time.Second {
			t.Fatalf("moved cold %v after %v, before the timeout", d.Cold, f.s.Now.Sub(first))
		}
		cold = append(cold, d.Cold...)
	}
	if len(cold) != 2 || !f.settled() || f.cold != 2 || f.warm != 0 {
		t.Fatalf("cold %v, settled %v, taken warm %d cold %d; want the 2 moves made cold after the timeout", cold, f.settled(), f.warm, f.cold)
	}
}

// TestWarmMovesAreCapped: preparations count under MaxMovesInFlight like
// hand-offs, so a drain prepares at most that many shards at once.
func TestWarmMovesAreCapped(t *testing.T) {
	f := newWarmFleet(rand.New(rand.NewPCG(5, 6)), 3, 60, 3*time.Second)
	p := Policy{PrepareTimeout: time.Minute, MaxMovesInFlight: 4}
	if _, _, err := f.settle(p, time.Second, 50, nil); err != nil {
		t.Fatal(err)
	}
	f.s.Members[0].Draining = true
	for range 120 {
		d := f.round(t, p, time.Second)
		inFlight := 0
		for i, h := range f.s.Holders {
			if _, listed := slices.BinarySearch(f.s.Assigned[h].Shards, f.s.Shards[i]); h != "" && !listed {
				inFlight++
			}
		}
		if n := len(d.Preparing) + inFlight; n > 4 {
			t.Fatalf("at %v: %d preparing and %d in flight, over the cap of 4", f.s.Now, len(d.Preparing), inFlight)
		}
	}
	if !f.settled() || f.warm != 20 || f.cold != 0 {
		t.Fatalf("after the drain: settled %v, %d warm, %d cold; want the 20 shards moved warm", f.settled(), f.warm, f.cold)
	}
}

// TestLostOwnerIsNotPrepared: the shards of a member that is lost are
// placed at once: there is no holder to keep them while a standby
// prepares.
func TestLostOwnerIsNotPrepared(t *testing.T) {
	f := newWarmFleet(rand.New(rand.NewPCG(7, 8)), 3, 30, time.Hour)
	p := Policy{PrepareTimeout: time.Minute}
	if _, _, err := f.settle(p, time.Second, 50, nil); err != nil {
		t.Fatal(err)
	}
	f.leave("w01")
	d := f.round(t, p, time.Second)
	if len(d.Preparing) != 0 || len(d.Moves) != 10 {
		t.Fatalf("after a member was lost: %d preparing, %d moves; want its 10 shards placed at once", len(d.Preparing), len(d.Moves))
	}
}

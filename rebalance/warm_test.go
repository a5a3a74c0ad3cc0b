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

// TestWarmLoadMovesUnderNoise: in a fleet with standbys balancing loads
// that change at every step, load moves still get made: a preparation
// goes on to its member whatever the next plans say, no new load move is
// planned while one is under way, and no step wakes at or before now.
func TestWarmLoadMovesUnderNoise(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 99))
		f := newWarmFleet(r, 4, 80, 5*time.Second)
		p := Policy{PrepareTimeout: 20 * time.Second, Load: LoadPolicy{Patience: time.Second, MinResidence: time.Second}}
		base := map[shard.ID]float64{}
		for _, id := range f.s.Shards {
			base[id] = 1
		}
		f.s.Loads = map[shard.ID]float64{}
		moves := 0
		for round := range 400 {
			if round == 30 { // the fleet at rest: w00's shards get 3 times heavier
				for i, id := range f.s.Shards {
					if f.s.Holders[i] == "w00" {
						base[id] = 3
					}
				}
			}
			for id, v := range base {
				f.s.Loads[id] = v * (0.9 + 0.2*r.Float64())
			}
			d := f.round(t, p, time.Second)
			if !d.Wake.IsZero() && !d.Wake.After(f.s.Now.Add(-time.Second)) {
				t.Fatalf("seed %d: wake %v at or before the step's now %v", seed, d.Wake, f.s.Now.Add(-time.Second))
			}
			for _, mv := range d.Moves {
				if mv.From != "" {
					moves++
				}
			}
		}
		if f.cold != 0 || len(f.preparing()) != 0 || moves == 0 {
			t.Fatalf("seed %d after 400 s of noise: %d load hand-offs, %d taken cold, preparing %v; want moves made warm and none stalled", seed, moves, f.cold, f.preparing())
		}
	}
}

// allHeld reports whether a live member holds every shard.
func (f *warmFleet) allHeld() bool {
	live := f.live()
	for _, h := range f.s.Holders {
		if _, ok := live[h]; !ok {
			return false
		}
	}
	return true
}

// preparing lists the shards the keys list as preparing.
func (f *warmFleet) preparing() []shard.ID {
	var out []shard.ID
	for _, a := range f.s.Assigned {
		for id := range a.Preparing {
			if !slices.Contains(a.Shards, id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// TestFailoverStandbys: with Policy.Standbys 1, every owned shard gets one
// standby on another member, in the other zone, the standbys spread
// evenly and stay put; when a member is lost, each of its shards goes to
// its standby and is taken warm, and gets a new standby.
func TestFailoverStandbys(t *testing.T) {
	f := newWarmFleet(rand.New(rand.NewPCG(9, 9)), 0, 48, 2*time.Second)
	for k := range 4 {
		f.join(Member{ID: fmt.Sprintf("w%02d", k), Weight: 1, Standby: true, Zone: fmt.Sprintf("z%d", k%2)})
	}
	p := Policy{PrepareTimeout: time.Minute, Standbys: 1}
	for range 20 {
		f.round(t, p, time.Second)
	}
	if !f.settled() {
		t.Fatal("not at rest after 20 s")
	}
	// check: one standby per shard, on another member, in the other zone
	// while zones are even; no member with more than one over the even
	// share.
	check := func(when string, evenZones bool) {
		t.Helper()
		zone := map[string]string{}
		for _, m := range f.s.Members {
			zone[m.ID] = m.Zone
		}
		per := map[shard.ID][]string{}
		for w, a := range f.s.Assigned {
			if _, live := zone[w]; !live {
				continue
			}
			if n, want := len(a.Standby), 48/len(zone); n > want+1 || (evenZones && n < want-1) {
				t.Errorf("%s: %s runs %d standbys, want %d ± 1", when, w, n, want)
			}
			for _, id := range a.Standby {
				per[id] = append(per[id], w)
			}
		}
		for i, id := range f.s.Shards {
			h := f.s.Holders[i]
			if ws := per[id]; len(ws) != 1 || ws[0] == h || (evenZones && zone[ws[0]] == zone[h]) {
				t.Errorf("%s: %s held by %s (zone %s) has standbys %v, want one on another member (in the other zone: %v)", when, id, h, zone[h], ws, evenZones)
			}
		}
	}
	check("at rest", true)
	again, err := f.step(p)
	if err != nil || len(again.Assign) != 0 {
		t.Fatalf("a step at rest rewrote %d keys (%v)", len(again.Assign), err)
	}
	// w01 (zone z1) is lost: its shards' standbys are all in z0, whose
	// two members' zone quota grows by 8 (32 of 48 shards for 2 of 3
	// members). Each of its shards goes to its standby, warm, even where
	// that takes a member over its quota; the members over it then hand
	// shards to w03, alone in z1, warm too.
	standbyOf := map[shard.ID]string{}
	for w, a := range f.s.Assigned {
		for _, id := range a.Standby {
			standbyOf[id] = w
		}
	}
	var lost []int
	for i, h := range f.s.Holders {
		if h == "w01" {
			lost = append(lost, i)
		}
	}
	f.leave("w01")
	warm, taken := f.warm, 0
	firstHolder := map[shard.ID]string{}
	for range 20 {
		before := slices.Clone(f.s.Holders)
		f.round(t, p, time.Second)
		for i, h := range f.s.Holders {
			if h != "" && h != before[i] {
				taken++
			}
		}
		for _, i := range lost {
			if id := f.s.Shards[i]; f.s.Holders[i] != "" && firstHolder[id] == "" {
				firstHolder[id] = f.s.Holders[i]
			}
		}
	}
	if !f.settled() || f.warm-warm != taken || f.cold != 0 {
		t.Fatalf("after w01 was lost: settled %v, %d shards taken, %d of them warm, %d cold; want every one warm", f.settled(), taken, f.warm-warm, f.cold)
	}
	for _, i := range lost {
		if id := f.s.Shards[i]; firstHolder[id] != standbyOf[id] {
			t.Errorf("w01's %s went first to %s, not to its standby %s", id, firstHolder[id], standbyOf[id])
		}
	}
	if taken <= len(lost) {
		t.Errorf("%d shards taken after the loss of %d: want w03 given some of z0's too, its zone's share", taken, len(lost))
	}
	check("after the loss", false)
}

// TestPromotedShardsStay: in a fleet of 12 over 128 with one standby per
// shard, a lost member's shards each go to their standby and stay there:
// the members they take over their quota hand off shards they held
// before, and a hand-off decided is not undone for a promoted shard of a
// lower score (each lost shard changes holder once, every takeover warm).
func TestPromotedShardsStay(t *testing.T) {
	for seed := range uint64(5) {
		f := newWarmFleet(rand.New(rand.NewPCG(seed, 12)), 12, 128, 5*time.Second)
		p := Policy{PrepareTimeout: time.Minute, Standbys: 1}
		for range 60 {
			f.round(t, p, time.Second)
		}
		if !f.settled() {
			t.Fatalf("seed %d: not at rest", seed)
		}
		victim := f.s.Members[int(seed)%12].ID
		var lost []int
		for i, h := range f.s.Holders {
			if h == victim {
				lost = append(lost, i)
			}
		}
		f.leave(victim)
		warm, taken := f.warm, 0
		changes := map[int]int{}
		for range 90 {
			before := slices.Clone(f.s.Holders)
			f.round(t, p, time.Second)
			for i, h := range f.s.Holders {
				if h != "" && h != before[i] {
					taken++
					changes[i]++
				}
			}
		}
		if !f.settled() || f.warm-warm != taken || f.cold != 0 {
			t.Fatalf("seed %d: after %s was lost: settled %v, %d taken, %d warm, %d cold", seed, victim, f.settled(), taken, f.warm-warm, f.cold)
		}
		for _, i := range lost {
			if changes[i] != 1 {
				t.Errorf("seed %d: %s's %s changed holder %d times after the loss, want once (to its standby)", seed, victim, f.s.Shards[i], changes[i])
			}
		}
	}
}

// TestPromotesTheMostAdvancedStandby: a lost owner's shard goes to the
// standby that reports ready, then to the one with the highest applied
// offset, not to the first by ID; a shard released by a live holder (a
// cold hand-off) goes where the plan puts it, not to its standby.
func TestPromotesTheMostAdvancedStandby(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := shard.Config{Shards: 2}.IDs()
	s := State{Now: now, Shards: ids, Holders: []string{"", ""}, Assigned: map[string]Assignment{
		"a": {Standby: ids}, "b": {Standby: ids}, "c": {Standby: ids},
		"gone": {Shards: ids}, // the lost owner's key
	}, Members: []Member{
		{ID: "a", Standby: true, Standbys: map[shard.ID]shard.StandbyState{ids[0]: {Applied: 90}, ids[1]: {Applied: 10, Ready: true}}},
		{ID: "b", Standby: true, Standbys: map[shard.ID]shard.StandbyState{ids[0]: {Applied: 95}, ids[1]: {Applied: 99}}},
		{ID: "c", Standby: true},
	}}
	d, err := Step(s, Policy{Standbys: 2})
	if err != nil {
		t.Fatal(err)
	}
	got := map[shard.ID]string{}
	for _, mv := range d.Moves {
		got[mv.Shard] = mv.To
	}
	if got[ids[0]] != "b" || got[ids[1]] != "a" {
		t.Fatalf("placed %v; want %s on b (applied 95 over 90) and %s on a (ready)", got, ids[0], ids[1])
	}
	delete(s.Assigned, "gone") // released by a live holder: not orphaned
	d, err = Step(s, Policy{Standbys: 2})
	if err != nil {
		t.Fatal(err)
	}
	plain := s
	plain.Assigned = map[string]Assignment{}
	for i := range plain.Members {
		plain.Members[i].Standby, plain.Members[i].Standbys = false, nil
	}
	dp, err := Step(plain, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Moves, dp.Moves) {
		t.Fatalf("free shards in no key, not orphaned: placed %v, want %v as without standbys", d.Moves, dp.Moves)
	}
}

// TestWarmFleetsSettle: random fleets that run standbys, with K standbys
// for failover, zones, and joins, losses and drains, checked at every
// step (checkDecision); once the events stop, each settles with no
// preparation left, every shard with its K standbys (as many as the
// other members allow), and no step waking at or before its now.
func TestWarmFleetsSettle(t *testing.T) {
	for c := range 300 {
		r := rand.New(rand.NewPCG(uint64(c), 31))
		n := 8 + r.IntN(120)
		f := newWarmFleet(r, 0, n, time.Duration(r.IntN(8))*time.Second)
		zones := 1 + r.IntN(3)
		next := 0
		join := func() {
			f.join(Member{ID: fmt.Sprintf("w%02d", next), Weight: 1 + r.IntN(2), Standby: r.IntN(5) != 0, Zone: fmt.Sprintf("z%d", next%zones)})
			next++
		}
		for range 2 + r.IntN(5) {
			join()
		}
		p := Policy{PrepareTimeout: 20 * time.Second, Standbys: r.IntN(3), MaxMovesInFlight: r.IntN(6)}
		step := func(round int) Decision {
			t.Helper()
			d, err := f.step(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkDecision(f.s, p, d); err != nil {
				t.Fatalf("fleet %d, round %d: %v", c, round, err)
			}
			if !d.Wake.IsZero() && !d.Wake.After(f.s.Now) {
				t.Fatalf("fleet %d, round %d: wake %v at or before now %v", c, round, d.Wake, f.s.Now)
			}

			f.apply(d)
			f.act()
			f.s.Now = f.s.Now.Add(time.Second)
			return d
		}
		for round := range 120 {
			switch u := r.IntN(40); {
			case u == 0:
				join()
			case u == 1 && len(f.s.Members) > 1:
				f.leave(f.s.Members[r.IntN(len(f.s.Members))].ID)
			case u == 2 && len(f.s.Members) > 1:
				m := &f.s.Members[r.IntN(len(f.s.Members))]
				m.Draining = !m.Draining
			}
			step(round)
		}
		for k := range f.s.Members {
			f.s.Members[k].Draining = false
		}
		// Warm moves go one budget at a time, each waiting for its
		// standby: up to every shard in waves of the budget, each wave the
		// ready time and a few steps.
		budget := p.MaxMovesInFlight
		if budget <= 0 {
			budget = DefaultMaxMovesInFlight(n, len(f.s.Members))
		}
		limit := 60 + (n/budget+1)*(int(f.readyAfter/time.Second)+4)
		for round := 0; ; round++ {
			if round == limit {
				t.Fatalf("fleet %d: settled %v, every shard held %v, preparing %v after %d rounds without events", c, f.settled(), f.allHeld(), f.preparing(), limit)
			}
			if d := step(120 + round); len(d.Assign) == 0 && len(d.Moves) == 0 && len(d.Preparing) == 0 && f.settled() && f.allHeld() {
				break
			}
		}
		capable := 0
		for _, m := range f.s.Members {
			if m.Standby {
				capable++
			}
		}
		for i, id := range f.s.Shards {
			h, listed := f.s.Holders[i], 0
			for _, m := range f.s.Members {
				if slices.Contains(f.s.Assigned[m.ID].Standby, id) {
					listed++
				}
			}
			want := max(0, min(p.Standbys, capable-1)) // one of them may be the owner
			if listed != want {
				t.Fatalf("fleet %d: %s held by %s has %d standbys, want %d (K %d, %d members run standbys)", c, id, h, listed, want, p.Standbys, capable)
			}
		}
	}
}

// TestColdLoadMoveWithStandbys: in load balance with standbys for
// failover, a load move to a member without a standby side is made once:
// the released shard goes to that member, not back to its standby's.
func TestColdLoadMoveWithStandbys(t *testing.T) {
	f := newWarmFleet(rand.New(rand.NewPCG(4, 4)), 0, 30, time.Second)
	f.join(Member{ID: "a", Weight: 1, Standby: true})
	f.join(Member{ID: "b", Weight: 1, Standby: true})
	f.join(Member{ID: "c", Weight: 1})
	p := Policy{Standbys: 1, Load: LoadPolicy{Patience: time.Second, MinResidence: time.Second}}
	f.s.Loads = map[shard.ID]float64{}
	for _, id := range f.s.Shards {
		f.s.Loads[id] = 1
	}
	handoffs := 0
	for round := range 300 {
		if round == 20 { // c's shards get light: load moves to c
			for i, id := range f.s.Shards {
				if f.s.Holders[i] == "c" {
					f.s.Loads[id] = 0.2
				}
			}
		}
		for _, mv := range f.round(t, p, time.Second).Moves {
			if mv.From != "" {
				handoffs++
			}
		}
	}
	if !f.settled() || handoffs == 0 || handoffs > 12 {
		t.Fatalf("after 300 s: settled %v, %d hand-offs; want a few load moves to c, made once", f.settled(), handoffs)
	}
}

// TestReturningWorkerKeepsItsStandbys: while a worker is inside its
// rejoin grace, the other members' keys keep the standbys of its shards,
// so that they are warm if it does not come back.
func TestReturningWorkerKeepsItsStandbys(t *testing.T) {
	f := newWarmFleet(rand.New(rand.NewPCG(6, 6)), 3, 30, time.Second)
	p := Policy{Standbys: 1}
	for range 20 {
		f.round(t, p, time.Second)
	}
	count := func() int {
		n := 0
		for i, id := range f.s.Shards {
			if f.s.Holders[i] != "w01" {
				continue
			}
			for w, a := range f.s.Assigned {
				if w != "w01" && slices.Contains(a.Standby, id) {
					n++
				}
			}
		}
		return n
	}
	before := count()
	f.s.Returning = map[string]time.Time{"w01": f.s.Now.Add(time.Minute)}
	f.s.Members[0].Weight = 2 // a change that makes the step rewrite keys
	for range 5 {
		f.round(t, p, time.Second)
	}
	if after := count(); before != 10 || after != before {
		t.Fatalf("standbys of w01's shards elsewhere: %d at rest, %d while it is returning; want 10 both", before, after)
	}
}

// TestUndrainEndsPreparations: a drain undone while its warm moves
// prepare ends them: none of the drained member's shards moves.
func TestUndrainEndsPreparations(t *testing.T) {
	f := newWarmFleet(rand.New(rand.NewPCG(8, 8)), 3, 30, 5*time.Second)
	p := Policy{MaxMovesInFlight: 8}
	if _, _, err := f.settle(p, time.Second, 50, nil); err != nil {
		t.Fatal(err)
	}
	held := map[shard.ID]bool{}
	for i, h := range f.s.Holders {
		if h == "w00" {
			held[f.s.Shards[i]] = true
		}
	}
	f.s.Members[0].Draining = true
	for range 3 {
		f.round(t, p, time.Second)
	}
	f.s.Members[0].Draining = false
	for range 30 {
		for _, mv := range f.round(t, p, time.Second).Moves {
			if mv.From == "w00" {
				t.Fatalf("%s handed off to %s after the drain was undone mid-preparation", mv.Shard, mv.To)
			}
		}
	}
	for i, h := range f.s.Holders {
		if held[f.s.Shards[i]] && h != "w00" {
			t.Fatalf("%s moved to %s after the drain was undone mid-preparation", f.s.Shards[i], h)
		}
	}
}

package rebalance

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// checkDecision verifies every per-decision guarantee of Step, recomputing
// what it needs from the state independently of Step. It returns the first
// violation.
func checkDecision(s State, p Policy, d Decision) error {
	if p.StuckAfter <= 0 {
		p.StuckAfter = DefaultStuckAfter
	}
	live := map[string]Member{}
	for _, m := range s.Members {
		live[m.ID] = m
	}
	known := map[shard.ID]bool{}
	for _, id := range s.Shards {
		known[id] = true
	}
	if p.MaxMovesInFlight <= 0 {
		p.MaxMovesInFlight = DefaultMaxMovesInFlight(len(known), len(live))
	}
	holder := map[shard.ID]string{} // live holders only
	for id, h := range holderMap(s) {
		if _, ok := live[h]; ok {
			holder[id] = h
		}
	}

	// Keys: Assign only for live members, Delete exactly the others.
	var dead []string
	for w := range s.Assigned {
		if _, ok := live[w]; !ok {
			dead = append(dead, w)
		}
	}
	slices.Sort(dead)
	if !slices.Equal(dead, d.Delete) {
		return fmt.Errorf("Delete = %v, want the keys of workers not live %v", d.Delete, dead)
	}
	in := map[string]map[shard.ID]bool{}
	out := map[string]map[shard.ID]bool{}
	outKey := map[string]Assignment{}
	for id := range live {
		in[id] = setOf(s.Assigned[id].Shards)
		outKey[id] = s.Assigned[id]
	}
	for w, a := range d.Assign {
		if _, ok := live[w]; !ok {
			return fmt.Errorf("Assign writes the key of %q, not a live member", w)
		}
		if !slices.IsSorted(a.Shards) || len(slices.Compact(slices.Clone(a.Shards))) != len(a.Shards) {
			return fmt.Errorf("key of %q: %d shards not sorted and distinct", w, len(a.Shards))
		}
		for _, id := range a.Shards {
			if !known[id] {
				return fmt.Errorf("key of %q names unknown shard %q", w, id)
			}
		}
		// A written key's wait and stuck mark are about the member's
		// current session, and a key that has neither names none.
		if (a.Stuck || a.Waiting > 0 || a.Verdicts > 0) != (a.StuckSession != "") || a.StuckSession != "" && a.StuckSession != live[w].Session {
			return fmt.Errorf("key of %q: stuck %v, waiting %d, verdicts %d, under session %q; member's session %q", w, a.Stuck, a.Waiting, a.Verdicts, a.StuckSession, live[w].Session)
		}
		if (a.Stuck && a.Verdicts < 1) || (a.Verdicts > 0) == a.StuckSince.IsZero() || a.StuckSince.After(s.Now) {
			return fmt.Errorf("key of %q: stuck %v, %d verdicts, the last at %v (now %v)", w, a.Stuck, a.Verdicts, a.StuckSince, s.Now)
		}
		outKey[w] = a
	}
	owner := map[shard.ID]string{}
	for w, a := range outKey {
		out[w] = setOf(a.Shards)
		for _, id := range a.Shards {
			if o, dup := owner[id]; dup {
				return fmt.Errorf("shard %q is in the keys of %q and %q", id, o, w)
			}
			owner[id] = w
		}
	}

	// Two-step: a held shard is in no key but its holder's.
	for id, w := range owner {
		if h, held := holder[id]; held && h != w {
			return fmt.Errorf("shard %q, held by %q, is in the key of %q", id, h, w)
		}
	}

	// Stuck marks: kept under the same session until the verdict ends,
	// cleared under another, and a stuck member's key lists only shards it
	// holds; a member on probation's at most one it does not hold.
	isStuck := func(a Assignment, m Member) bool { return a.Stuck && a.StuckSession == m.Session }
	onProbation := func(a Assignment, m Member) bool { return !a.Stuck && a.Verdicts > 0 && a.StuckSession == m.Session }
	anyActive := false // a member neither stuck nor on probation after the step
	anyWorking := false
	for id, m := range live {
		was, now := isStuck(s.Assigned[id], m), isStuck(outKey[id], m)
		end := verdictEnd(s.Assigned[id], p, s.Now)
		if was && !now && s.Now.Before(end) {
			return fmt.Errorf("member %q was stuck under its session %q until %v and is not any more at %v", id, m.Session, end, s.Now)
		}
		if was && now && !s.Now.Before(end) {
			return fmt.Errorf("member %q is still stuck at %v, its verdict ended at %v", id, s.Now, end)
		}
		if was && now && outKey[id].Verdicts != max(s.Assigned[id].Verdicts, 1) {
			return fmt.Errorf("member %q's verdict count went from %d to %d while the verdict lasted", id, s.Assigned[id].Verdicts, outKey[id].Verdicts)
		}
		if onProbation(outKey[id], m) {
			notHeld := 0
			for sh := range out[id] {
				if holder[sh] != id {
					notHeld++
				}
			}
			if notHeld > 1 {
				return fmt.Errorf("member %q on probation is assigned %d shards it does not hold", id, notHeld)
			}
			continue
		}
		if s.Assigned[id].Stuck && !was && now {
			return fmt.Errorf("member %q, marked stuck under another session, is marked again at once", id)
		}
		if now {
			for sh := range out[id] {
				if holder[sh] != id {
					return fmt.Errorf("stuck member %q is assigned %q, which it does not hold", id, sh)
				}
			}
		} else {
			anyActive = true
			anyWorking = anyWorking || !m.Draining
		}
	}

	// Free shards are all assigned, when some member is not stuck; a
	// draining member gains none while some member that is not stuck does
	// not drain.
	for _, id := range s.Shards {
		if _, held := holder[id]; held {
			continue
		}
		w, ok := owner[id]
		if anyActive && !ok {
			return fmt.Errorf("free shard %q is in no key", id)
		}
		if ok && anyWorking && live[w].Draining && !in[w][id] {
			return fmt.Errorf("free shard %q added to the key of draining %q", id, w)
		}
	}

	// Hand-offs: started only under the cap; the moves list exactly the
	// hand-offs started and the free shards added, sorted, with reasons.
	var started, flying int
	var want []Transfer
	for _, id := range slices.Sorted(maps.Keys(known)) {
		if h, held := holder[id]; held {
			switch {
			case in[h][id] && !out[h][id]:
				started++
				want = append(want, Transfer{Shard: id, From: h})
			case !in[h][id] && !out[h][id]:
				flying++
			}
		} else if w, ok := owner[id]; ok && !in[w][id] {
			want = append(want, Transfer{Shard: id, To: w})
		}
	}
	if started > 0 && started+flying > p.MaxMovesInFlight {
		return fmt.Errorf("%d hand-offs started with %d in flight, cap %d", started, flying, p.MaxMovesInFlight)
	}
	// Load moves leave members that drain only when every member that is
	// neither cordoned nor stuck drains, and cordoned ones only when every
	// member is cordoned.
	working, allCordoned := false, true
	for id, m := range live {
		allCordoned = allCordoned && m.Cordoned
		working = working || (!m.Draining && !m.Cordoned && !isStuck(outKey[id], m))
	}
	if len(d.Moves) != len(want) {
		return fmt.Errorf("%d moves, want %d:\n got %v\nwant %v", len(d.Moves), len(want), d.Moves, want)
	}
	for k, mv := range d.Moves {
		w := want[k]
		if mv.Shard != w.Shard || mv.From != w.From || (w.To != "" && mv.To != w.To) {
			return fmt.Errorf("move %d is %+v, want %+v", k, mv, w)
		}
		switch {
		case mv.Reason < shard.ReasonFree || mv.Reason > shard.ReasonLoad:
			return fmt.Errorf("move %+v has no reason", mv)
		case mv.Reason == shard.ReasonLoad && (mv.From == "" || s.Loads == nil || (live[mv.From].Draining && working) || (live[mv.From].Cordoned && !allCordoned)):
			return fmt.Errorf("load move %+v without loads or from a member that drains or is cordoned", mv)
		case mv.From != "" && mv.Reason != shard.ReasonDrain && mv.Reason != shard.ReasonRebalance && mv.Reason != shard.ReasonLoad:
			return fmt.Errorf("hand-off %+v for reason %v", mv, mv.Reason)
		case mv.From != "" && (mv.To == mv.From || live[mv.To].ID == "" || isStuck(outKey[mv.To], live[mv.To])):
			return fmt.Errorf("hand-off %+v meant for a member that cannot take it", mv)
		case mv.Reason == shard.ReasonDrain && mv.From != "" && !live[mv.From].Draining:
			return fmt.Errorf("hand-off %+v for drain from a member that does not drain", mv)
		}
	}

	// Wake: when the first wait would end, and every wait counts free shards.
	var wake time.Time
	for id, m := range live {
		a := outKey[id]
		free := 0
		for sh := range out[id] {
			if _, held := holder[sh]; !held {
				free++
			}
		}
		switch {
		case isStuck(a, m):
			if at := verdictEnd(a, p, s.Now); wake.IsZero() || at.Before(wake) {
				wake = at
			}
		case free == 0 && (a.Waiting != 0 || !a.WaitingSince.IsZero()):
			return fmt.Errorf("member %q has no free shard assigned but waits for %d since %v", id, a.Waiting, a.WaitingSince)
		case free > 0 && (a.Waiting < free || a.WaitingSince.After(s.Now) || !a.WaitingSince.Add(p.StuckAfter).After(s.Now)):
			return fmt.Errorf("member %q has %d free shards assigned, waits for %d since %v (now %v)", id, free, a.Waiting, a.WaitingSince, s.Now)
		case free > 0:
			if at := a.WaitingSince.Add(p.StuckAfter); wake.IsZero() || at.Before(wake) {
				wake = at
			}
		}
	}
	// A warm move preparing wakes the step at its timeout.
	timeout := p.PrepareTimeout
	if timeout <= 0 {
		timeout = DefaultPrepareTimeout
	}
	for _, mv := range d.Preparing {
		a, ok := d.Assign[mv.To]
		if !ok {
			a = s.Assigned[mv.To]
		}
		since := a.Preparing[mv.Shard]
		if since.After(s.Now) {
			since = s.Now
		}
		at := since.Add(timeout)
		if !at.After(s.Now) {
			return fmt.Errorf("%s prepares since %v, timed out at %v, not after now %v: it should have moved cold", mv.Shard, since, at, s.Now)
		}
		if wake.IsZero() || at.Before(wake) {
			wake = at
		}
	}
	// In load balance a step may also wake when a load move held back by
	// the minimum residence becomes possible: after now, before the waits.
	residence := s.Loads != nil && d.Wake.After(s.Now) && (wake.IsZero() || d.Wake.Before(wake))
	if !wake.Equal(d.Wake) && !residence {
		return fmt.Errorf("Wake = %v, want %v", d.Wake, wake)
	}
	return checkWarm(s, d)
}

func setOf(ids []shard.ID) map[shard.ID]bool {
	set := make(map[shard.ID]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}

// sameDecision compares two decisions, times by instant.
func sameDecision(a, b Decision) bool {
	if a.ByLoad != b.ByLoad || !slices.Equal(a.Delete, b.Delete) || !slices.Equal(a.Moves, b.Moves) || !a.Wake.Equal(b.Wake) || len(a.Assign) != len(b.Assign) {
		return false
	}
	for w, x := range a.Assign {
		y, ok := b.Assign[w]
		if !ok || !slices.Equal(x.Shards, y.Shards) || !x.Since.Equal(y.Since) || x.Waiting != y.Waiting ||
			!x.WaitingSince.Equal(y.WaitingSince) || x.Stuck != y.Stuck || x.StuckSession != y.StuckSession ||
			!maps.EqualFunc(x.Arrived, y.Arrived, time.Time.Equal) || !sameWarm(x, y.Standby, y.Preparing) {
			return false
		}
	}
	return slices.Equal(a.Preparing, b.Preparing) && slices.Equal(a.Cold, b.Cold)
}

// verdictEnd is when the stuck verdict recorded in a ends:
// StuckAfter·2^Verdicts (at most 2^6) after StuckSince, or after now when
// the key records no time (or one after now).
func verdictEnd(a Assignment, p Policy, now time.Time) time.Time {
	since := a.StuckSince
	if since.IsZero() || since.After(now) {
		since = now
	}
	return since.Add(p.StuckAfter * time.Duration(1<<min(max(a.Verdicts, 1), 6)))
}

package rebalance

import (
	"math"
	"slices"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// judge counts the free shards in every member's key and decides which
// members are stuck and which are on probation. A member is stuck while its
// key carries a stuck mark for its current session that has not expired
// (probationAt). A member not marked is judged stuck now when its
// key lists free shards, as many as the wait recorded in the key, none of
// the shards the key listed as free is now its own, and the wait began
// StuckAfter or more ago: the worker took none of them for that long. (The
// count alone is not enough: a worker that took the shards it waited for
// while as many others of its key were freed — its old session's, after a
// rejoin — made progress.) A worker that takes some (the count went down) or is given more
// (it went up) starts a new wait instead; see nextKey. A member whose
// verdict expired, or whose key records verdicts and that has taken none
// of the free shards its key lists since, is on probation; taking one ends
// it.
func (st *step) judge() {
	for m, set := range st.sets {
		for _, i := range set {
			if st.holder[i] < 0 {
				st.freeIn[m]++
			}
		}
		key := st.keys[m]
		if key.StuckSession == st.members[m].Session && (key.Stuck || key.Verdicts > 0) {
			st.stuck[m] = key.Stuck && st.now.Before(st.probationAt(key))
			st.probation[m] = !st.stuck[m] && !st.took[m] && !st.draining[m]
			if key.Stuck { // lasting, or ended now: no wait of the verdict's time to judge
				continue
			}
		}
		waiting, since := st.wait(m)
		st.stuck[m] = waiting > 0 && st.freeIn[m] == waiting && !st.took[m] && st.now.Sub(since) >= st.p.StuckAfter
		st.probation[m] = st.probation[m] && !st.stuck[m]
	}
}

// maxVerdictShift caps the doubling of a verdict's length: a worker that
// stays stuck is tried again every 64·StuckAfter at the longest.
const maxVerdictShift = 6

// probationAt is when the stuck verdict recorded in key expires:
// StuckAfter·2^Verdicts after StuckSince. A verdict without a time (a key
// written before verdicts expired) counts from now: it is given one.
func (st *step) probationAt(key Assignment) time.Time {
	since := key.StuckSince
	if since.IsZero() || since.After(st.now) {
		since = st.now
	}
	length := st.p.StuckAfter
	for range min(max(key.Verdicts, 1), maxVerdictShift) {
		if length > math.MaxInt64/2 {
			return since.Add(math.MaxInt64) // about 292 years: never, in practice
		}
		length *= 2
	}
	return since.Add(length)
}

// nextKey returns member m's key after this step and whether it must be
// written. list is the key's new shard set when changed, free the shards
// of the key after this step that have no live holder; grew says that the
// new set contains the old one. A change of free alone is written too: it
// is how a worker learns that a lock it took is gone (an operator released
// or deleted it), since it watches nothing but its key.
//
// The wait: when the set changes, Waiting becomes the number of free shards
// in it and WaitingSince now, except that a change that only adds shards to
// a worker that had taken none of those it was waiting for keeps its wait's
// start (so that trickling more shards to a stuck worker does not postpone
// the verdict). When the set stays, a wait starts when free shards appear
// (or more of them), and the count is brought down to the present one only
// at the verdict, StuckAfter after the wait began: a worker that took some
// is not stuck and waits anew; a worker that took all has nothing to wait
// for. Keys are thus written when the set changes, when a wait ends (a
// worker that took some of its free shards: Free shrinks and the wait
// restarts), and at most once per StuckAfter while one lasts. So a worker
// placed free shards gets its key written once more after it took them;
// writing Free only when it gains a shard would spare that write, but then
// a shard freed again after being taken could not be told from one never
// taken without comparing AsOf with the lock's index.
func (st *step) nextKey(m int, list, free []shard.ID, changed, grew bool) (Assignment, bool) {
	old := st.keys[m]
	key := old
	if changed {
		key.Shards, key.Since = list, st.now
	}
	key.Free = free
	waiting, since := st.wait(m)
	in, out := st.freeIn[m], st.freeOut[m]
	key.Stuck, key.StuckSession = st.stuck[m], ""
	key.Verdicts, key.StuckSince = st.verdict(m)
	switch {
	case st.stuck[m]:
		key.Waiting, key.WaitingSince = 0, time.Time{}
	case out == 0:
		key.Waiting, key.WaitingSince = 0, time.Time{}
	case old.Stuck: // a verdict ended (or was about another session): a new wait
		key.Waiting, key.WaitingSince = out, st.now
	case st.took[m]: // it took some of the free shards it was given: a new wait
		key.Waiting, key.WaitingSince = out, st.now
	case changed:
		key.Waiting, key.WaitingSince = out, st.now
		if grew && in > 0 && in == waiting {
			key.WaitingSince = since
		}
	case waiting == 0 || in > waiting:
		key.Waiting, key.WaitingSince = in, st.now
	case in < waiting && st.now.Sub(since) >= st.p.StuckAfter:
		key.Waiting, key.WaitingSince = in, st.now
	default:
		key.Waiting, key.WaitingSince = waiting, since
	}
	if key.Stuck || key.Waiting > 0 || key.Verdicts > 0 { // the wait and the verdicts are about the member's current session
		key.StuckSession = st.members[m].Session
	}
	switch {
	case st.band != nil:
		key.OutOfBand = st.band[m]
	case st.load == nil:
		key.OutOfBand = time.Time{}
	}
	write := changed || key.Stuck != old.Stuck || key.StuckSession != old.StuckSession || !key.OutOfBand.Equal(old.OutOfBand) ||
		key.Verdicts != old.Verdicts || !key.StuckSince.Equal(old.StuckSince) ||
		key.Waiting != old.Waiting || !key.WaitingSince.Equal(old.WaitingSince) || !slices.Equal(key.Free, old.Free)
	if write && !changed { // the same shards, sorted, in a slice of its own
		key.Shards = st.keyShards(m)
	}
	return key, write
}

// keyShards are member m's key's shards as read, sorted, in a slice of
// their own.
func (st *step) keyShards(m int) []shard.ID {
	out := make([]shard.ID, len(st.sets[m]))
	for k, i := range st.sets[m] {
		out[k] = st.shards[i]
	}
	return out
}

// verdict returns member m's verdict count and the time of the last one
// after this step: a verdict that lasts keeps both (a time missing or
// after now becomes now), a new verdict counts one more under the same
// session, a probation keeps them, and anything else clears them.
func (st *step) verdict(m int) (int, time.Time) {
	old := st.keys[m]
	same := old.StuckSession == st.members[m].Session
	switch {
	case st.stuck[m] && same && old.Stuck:
		since := old.StuckSince
		if since.IsZero() || since.After(st.now) {
			since = st.now
		}
		return max(old.Verdicts, 1), since
	case st.stuck[m] && same:
		return old.Verdicts + 1, st.now
	case st.stuck[m]:
		return 1, st.now
	case st.probation[m] && old.StuckSince.After(st.now):
		return old.Verdicts, st.now
	case st.probation[m]:
		return old.Verdicts, old.StuckSince
	}
	return 0, time.Time{}
}

// wait returns the wait recorded in member m's key, or 0 and the zero time
// when it records none usable: no free shard, no time, a time after now (a
// key written by an assignor whose clock ran ahead: the wait restarts now),
// or a wait or stuck mark recorded for another session (the key is about
// the member's previous life: a worker that rejoined starts afresh).
func (st *step) wait(m int) (int, time.Time) {
	a := st.keys[m]
	if a.Waiting <= 0 || a.WaitingSince.IsZero() || a.WaitingSince.After(st.now) ||
		a.StuckSession != st.members[m].Session {
		return 0, time.Time{}
	}
	return a.Waiting, a.WaitingSince
}

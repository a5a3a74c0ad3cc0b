package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// runLog checks the promise of the worker package doc: no instant at which
// two workers run the same shard's handler, whichever way a lease ends.
//
// It records every handler invocation as a run: from the start of Process
// (called after the claim's token was fenced) to its return, in simulated
// time since the start of the seed, less the stretches in which the
// handler was not running although Process had not returned:
//
//   - frozen by a pause: the sim's pause stops a handler at its worker's
//     gate, just before it sends a commit; from reaching the closed gate
//     until it opens, the handler is a stopped process, not running;
//   - dead: from its worker's crash on, for good (a crashed process runs
//     nothing; the sim's goroutines only wind down, without effects);
//   - out of contract: a slow-handlers step ignores its context and
//     Claim.Lost, which the contract forbids once Lost has closed and
//     which the worker documents it cannot stop (worker/doc.go, "What is
//     not guaranteed"); from the moment Lost closed until the step ends,
//     it counts as frozen. What the worker must still do for such a
//     handler — keep the lock until it returns while its session lives —
//     is checked at every Release (released).
//
// Running stretches are half-open, [from, to): a handler returning at the
// instant the next owner's starts does not overlap it (with LockDelay at
// its least, the old worker's step-down and the new owner's acquisition
// fall on the same instant).
//
// The invariant has three parts:
//
//  1. For each shard, the running stretches of handlers with different
//     tokens never overlap. A paused handler runs again from the moment
//     it wakes: one that does not return at once after waking to a claim
//     already lost by the clock overlaps the next owner.
//  2. An effect — a commit that passed Claim.Err and reached the store —
//     comes neither after the start of a handler with a higher token for
//     the shard (in the order they happened: within one instant a
//     sequence number tells), nor at or after its claim's local deadline
//     (mirrored from outside, see leases). The fence would refuse the
//     first kind, but the worker let a stale owner act: after waking from
//     a pause, Claim.Err must see the clock.
//  3. A worker never releases a shard's lock while a handler of the claim
//     still runs (released).
//
// A coordinator clock jump breaks the lease's timing assumption by design:
// an overlap or late effect that starts within a TTL after a jump, while
// the older claim's worker was still within its local deadline, is
// counted (Result.RunOverlaps) instead of reported; the fence keeps it
// harmless.
type runLog struct {
	c      *checker
	leases *leases // nil: no deadline check (unit tests)
	// excuse reports whether an overlap with older's run, or a late effect
	// of older, at at is the by-design effect of a clock jump. Nil: never.
	excuse func(older shard.Claim, at time.Duration) bool

	mu       sync.Mutex
	seq      uint64 // orders starts and effects within one instant
	shards   map[shard.ID][]*handlerRun
	reported map[[2]*handlerRun]bool
	late     map[shard.Claim]bool // claims whose late effect was reported or excused
	excused  int64
}

func newRunLog(c *checker, l *leases, excuse func(shard.Claim, time.Duration) bool) *runLog {
	return &runLog{c: c, leases: l, excuse: excuse, shards: map[shard.ID][]*handlerRun{},
		reported: map[[2]*handlerRun]bool{}, late: map[shard.Claim]bool{}}
}

// span is a stretch [from, to) of simulated time since the seed's start.
type span struct{ from, to time.Duration }

// handlerRun is one handler invocation.
type handlerRun struct {
	worker string
	proc   int // the worker process (member.n): a restart under the same ID is another
	claim  shard.Claim
	start  time.Duration
	seq    uint64        // of the start
	end    time.Duration // once ended
	ended  bool
	off    []span        // closed stretches in which it was not running
	offAt  time.Duration // start of an open one, while offOn
	offOn  bool
	dead   bool // crashed: the open stretch lasts until the end
}

func (r *handlerRun) String() string { return fmt.Sprintf("%s's handler for %v", r.worker, r.claim) }

// running returns the stretches in which r ran, up to its end or, while
// Process has not returned, up to now: in time order, none empty.
func (r *handlerRun) running(now time.Duration) []span {
	to := now
	if r.ended {
		to = r.end
	}
	off := slices.Clone(r.off)
	if r.offOn {
		off = append(off, span{r.offAt, to})
	}
	slices.SortFunc(off, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	var out []span
	cur := r.start
	for _, o := range off {
		if end := min(o.from, to); cur < end {
			out = append(out, span{cur, end})
		}
		cur = max(cur, o.to)
	}
	if cur < to {
		out = append(out, span{cur, to})
	}
	return out
}

// firstOverlap returns the earliest stretch in which a and b both run.
func firstOverlap(a, b []span) (span, bool) {
	var best span
	found := false
	for _, x := range a {
		for _, y := range b {
			s := span{max(x.from, y.from), min(x.to, y.to)}
			if s.from < s.to && (!found || s.from < best.from) {
				best, found = s, true
			}
		}
	}
	return best, found
}

// describe says when r ran, given its running stretches ss.
func (r *handlerRun) describe(ss []span) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = fmt.Sprintf("[%v, %v)", s.from, s.to)
	}
	d := fmt.Sprintf("%v: ran %s", r, strings.Join(parts, " "))
	if !r.ended {
		d += " so far"
	}
	return d
}

// begin records a handler's start.
func (l *runLog) begin(worker string, proc int, c shard.Claim, at time.Duration) *handlerRun {
	r := &handlerRun{worker: worker, proc: proc, claim: c, start: at}
	l.mu.Lock()
	l.seq++
	r.seq = l.seq
	l.shards[c.Shard] = append(l.shards[c.Shard], r)
	l.mu.Unlock()
	return r
}

// halt records that r stops running at at (frozen, or ignoring its lost
// claim); resume, that it runs again.
func (l *runLog) halt(r *handlerRun, at time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !r.offOn {
		r.offOn, r.offAt = true, at
	}
}

func (l *runLog) resume(r *handlerRun, at time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.offOn && !r.dead {
		if at > r.offAt {
			r.off = append(r.off, span{r.offAt, at})
		}
		r.offOn = false
	}
}

// crash records that process proc crashed at at: none of its handlers
// runs from then on.
func (l *runLog) crash(proc int, at time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, runs := range l.shards {
		for _, r := range runs {
			if r.proc == proc && !r.ended {
				r.dead = true
				if !r.offOn {
					r.offOn, r.offAt = true, at
				}
			}
		}
	}
}

// end records that r returned at at and checks it against every other run
// of its shard.
func (l *runLog) end(r *handlerRun, at time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r.ended, r.end = true, at
	if r.offOn {
		if at > r.offAt {
			r.off = append(r.off, span{r.offAt, at})
		}
		r.offOn = false
	}
	l.checkLocked(r, at)
}

// final checks the runs that never returned, as of now.
func (l *runLog) final(now time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, runs := range l.shards {
		for _, r := range runs {
			if !r.ended {
				l.checkLocked(r, now)
			}
		}
	}
}

func (l *runLog) checkLocked(r *handlerRun, now time.Duration) {
	for _, o := range l.shards[r.claim.Shard] {
		if o == r || o.claim.Token == r.claim.Token {
			continue
		}
		older, newer := o, r
		if r.claim.Token < o.claim.Token {
			older, newer = r, o
		}
		key := [2]*handlerRun{older, newer}
		if l.reported[key] {
			continue
		}
		ro, rn := older.running(now), newer.running(now)
		s, ok := firstOverlap(ro, rn)
		if !ok {
			continue
		}
		l.reported[key] = true
		if l.excuse != nil && l.excuse(older.claim, s.from) {
			l.excused++
			continue
		}
		l.c.violate("shard %s: two handlers ran at once from t=%v to t=%v: %s; %s",
			r.claim.Shard, s.from, s.to, older.describe(ro), newer.describe(rn))
	}
}

// effect records that a commit of claim c reached the store at at, having
// passed Claim.Err, and checks that no handler of a newer token of the
// shard had started and that c's local deadline had not passed.
func (l *runLog) effect(c shard.Claim, at time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	if l.late[c] {
		return // reported once
	}
	var own, newer *handlerRun
	for _, o := range l.shards[c.Shard] {
		switch {
		case o.claim.Token == c.Token:
			own = o
		case o.claim.Token > c.Token && (newer == nil || o.seq < newer.seq):
			newer = o // every run recorded so far started before this effect
		}
	}
	who := func() string {
		if own == nil {
			return "a handler for " + c.String()
		}
		return own.String()
	}
	if newer != nil {
		l.late[c] = true
		if l.excuse != nil && l.excuse(c, at) {
			l.excused++
			return
		}
		l.c.violate("shard %s: %s committed at t=%v, after the start of %v at t=%v: the claim let a stale owner act",
			c.Shard, who(), at, newer, newer.start)
		return
	}
	if l.leases == nil {
		return
	}
	if sid, deadline, ok := l.leases.deadline(c); ok && !l.c.start.Add(at).Before(deadline) {
		l.late[c] = true
		l.c.violate("shard %s: %s committed at t=%v, %v past its local deadline (session %s): Claim.Err let it through",
			c.Shard, who(), at, l.c.start.Add(at).Sub(deadline), sid)
	}
}

// released checks a Release that succeeded at at: no handler of a claim
// of session sid on those shards may still be running (frozen or not).
func (l *runLog) released(sid shard.SessionID, ids []shard.ID, at time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		for _, o := range l.shards[id] {
			if o.ended {
				continue
			}
			if s, ok := l.leases.session(o.claim); ok && s == sid {
				l.c.violate("shard %s: %s released it at t=%v while %v, started at t=%v, had not returned",
					id, o.worker, at, o, o.start)
			}
		}
	}
}

// overlapsExcused returns how many overlaps clock jumps excused.
func (l *runLog) overlapsExcused() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.excused
}

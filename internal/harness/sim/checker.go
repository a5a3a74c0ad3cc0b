package sim

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// checker collects invariant violations, each stamped with the simulated
// time it was seen at.
type checker struct {
	start time.Time
	trace func(string)

	mu         sync.Mutex
	violations []string
}

func (c *checker) elapsed() time.Duration { return time.Since(c.start) }

func (c *checker) violate(format string, args ...any) {
	msg := fmt.Sprintf("t=%v: ", c.elapsed()) + fmt.Sprintf(format, args...)
	c.mu.Lock()
	c.violations = append(c.violations, msg)
	c.mu.Unlock()
	if c.trace != nil {
		c.trace("VIOLATION " + msg)
	}
}

func (c *checker) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.violations)
}

func (c *checker) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.violations...)
}

// watchTokens follows the coordinator from outside (shard.Follow) and
// checks the fencing tokens: a shard key's index never goes back, and
// each new claim of a shard carries a higher token than every earlier
// one, so no token is ever handed to two sessions.
func watchTokens(ctx context.Context, co shard.Coordinator, c *checker) {
	type held struct {
		session shard.SessionID
		token   shard.Token
	}
	index := map[shard.ID]shard.Token{}
	last := map[shard.ID]held{}
	var at uint64 // the index of the last snapshot
	// A failed read ends the check: the embedded coordinator fails only
	// when ctx ends.
	stop := func(error) bool { return false }
	_ = shard.Follow(ctx, co.Fleet().Watch, shard.FollowOptions{OnError: stop}, func(snap shard.Snapshot) (time.Time, error) {
		if snap.Index < at {
			c.violate("coordinator index went back from %d to %d", at, snap.Index)
		}
		at = snap.Index
		for _, st := range snap.Shards {
			if st.Token < index[st.Shard] {
				c.violate("shard %s: key index went back from %d to %d", st.Shard, index[st.Shard], st.Token)
			}
			index[st.Shard] = st.Token
			if !st.Held() {
				continue
			}
			prev, seen := last[st.Shard]
			// A watch may skip states (a release and a new lock between two
			// snapshots), so any new claim — even by the same session —
			// must carry a higher token than the last one seen.
			if seen && prev != (held{st.Session, st.Token}) && st.Token <= prev.token {
				c.violate("shard %s: new claim by %s got token %d, not above %d of the earlier claim by %s",
					st.Shard, st.Session, st.Token, prev.token, prev.session)
			}
			last[st.Shard] = held{st.Session, st.Token}
		}
		return time.Time{}, nil
	})
}

// handlers tracks every running handler invocation, to check that a handler
// never acts past its worker's local step-down deadline, and that a new
// owner never starts while an older one still rightly believes it owns the
// shard.
type handlers struct {
	c      *checker
	leases *leases
	jumps  *jumps

	mu      sync.Mutex
	running map[shard.ID][]*invocation
	active  atomic.Int64

	starts, lostEnds atomic.Int64
	// overlaps counts new owners that started while an old owner still
	// believed, within its own deadline, that it owned the shard — possible
	// only after a coordinator clock jump, and harmless thanks to the fence.
	overlaps atomic.Int64
}

type invocation struct {
	worker string
	claim  shard.Claim
	ctx    context.Context
}

func newHandlers(c *checker, l *leases, j *jumps) *handlers {
	return &handlers{c: c, leases: l, jumps: j, running: map[shard.ID][]*invocation{}}
}

// begin registers a handler invocation and checks the older ones of the
// shard. The returned func unregisters it.
func (h *handlers) begin(worker string, claim shard.Claim, ctx context.Context) func() {
	h.starts.Add(1)
	h.active.Add(1)
	inv := &invocation{worker: worker, claim: claim, ctx: ctx}
	now := time.Now()
	h.mu.Lock()
	for _, o := range h.running[claim.Shard] {
		if o.claim.Token == claim.Token || o.ctx.Err() != nil {
			continue // the same claim restarted, or an owner that knows it is done
		}
		sid, deadline, ok := h.leases.deadline(o.claim)
		if !ok || !now.Before(deadline) {
			continue // its own deadline has come: it stops at this very instant
		}
		if h.jumps.since(now.Add(-h.jumps.window)) {
			h.overlaps.Add(1)
			continue
		}
		h.c.violate("%s started %v while %s's handler for %v still owned it (session %s, local deadline in %v)",
			worker, claim, o.worker, o.claim, sid, deadline.Sub(now))
	}
	h.running[claim.Shard] = append(h.running[claim.Shard], inv)
	h.mu.Unlock()
	return func() {
		if ctx.Err() != nil && isLost(context.Cause(ctx)) {
			h.lostEnds.Add(1)
		}
		h.mu.Lock()
		list := h.running[claim.Shard]
		for i, o := range list {
			if o == inv {
				h.running[claim.Shard] = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		h.mu.Unlock()
		h.active.Add(-1)
	}
}

// acting is called by a handler that has just seen its context live and is
// about to act as owner: its worker's local deadline must not have passed.
func (h *handlers) acting(worker string, claim shard.Claim) {
	sid, deadline, ok := h.leases.deadline(claim)
	if !ok {
		h.c.violate("%s runs a handler for %v, a claim no session of it was granted", worker, claim)
		return
	}
	if now := time.Now(); now.After(deadline) {
		h.c.violate("%s's handler for %v still acts %v past its local step-down deadline (session %s)",
			worker, claim, now.Sub(deadline), sid)
	}
}

// jumps remembers when the coordinator's clock jumped.
type jumps struct {
	window time.Duration // how long a jump may let a session expire early

	mu sync.Mutex
	at []time.Time
}

func (j *jumps) add(t time.Time) {
	j.mu.Lock()
	j.at = append(j.at, t)
	j.mu.Unlock()
}

// since reports whether a jump happened at or after t.
func (j *jumps) since(t time.Time) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, a := range j.at {
		if !a.Before(t) {
			return true
		}
	}
	return false
}

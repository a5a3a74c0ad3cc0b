package memory

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// session is a live session. A session that ends is removed from the map at
// once, so "exists" and "live" are the same thing.
type session struct {
	id       shard.SessionID
	seq      uint64 // creation order, for deterministic ordering
	spec     shard.SessionSpec
	deadline time.Time // invalidated when Now reaches it
	timer    Timer     // fires at deadline
}

// sessions is the coordinator's shard.Sessions.
type sessions struct{ c *Coordinator }

// Sessions returns the coordinator's sessions.
func (c *Coordinator) Sessions() shard.Sessions { return sessions{c} }

// Create opens a session that lives until TTL passes without a renewal
// or it is destroyed. Worker must be set, TTL must be positive and LockDelay
// not negative; otherwise the error wraps shard.ErrInvalidArgument and names
// every wrong value. Creating a session is not a write: the index does not
// move, as sessions are not keys.
func (ss sessions) Create(ctx context.Context, spec shard.SessionSpec) (shard.SessionID, error) {
	c := ss.c
	if err := ctxErr(ctx); err != nil {
		return "", err
	}
	var problems []string
	if spec.Worker == "" {
		problems = append(problems, "worker is empty")
	}
	if spec.TTL <= 0 {
		problems = append(problems, fmt.Sprintf("ttl %v must be positive", spec.TTL))
	}
	if spec.LockDelay < 0 {
		problems = append(problems, fmt.Sprintf("lock-delay %v must not be negative", spec.LockDelay))
	}
	if len(problems) > 0 {
		return "", fmt.Errorf("%w: session spec: %s", shard.ErrInvalidArgument, strings.Join(problems, "; "))
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.catchUpLocked()

	c.nextSession++
	s := &session{
		id:       shard.SessionID(fmt.Sprintf("session-%d", c.nextSession)),
		seq:      c.nextSession,
		spec:     spec,
		deadline: now.Add(spec.TTL),
	}
	s.timer = c.scheduleLocked(s.deadline)
	c.sessions[s.id] = s
	return s.id, nil
}

// Renew moves the session's deadline to now + TTL. A session whose
// deadline has been reached is already gone (a renewal at exactly TTL is too
// late), and the error wraps shard.ErrSessionInvalid.
func (ss sessions) Renew(ctx context.Context, id shard.SessionID) error {
	c := ss.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.catchUpLocked()

	s, err := c.liveSessionLocked(id)
	if err != nil {
		return err
	}
	s.deadline = now.Add(s.spec.TTL)
	s.timer.Stop()
	s.timer = c.scheduleLocked(s.deadline)
	return nil
}

// Destroy ends the session and releases everything it holds in one
// write. As in Consul, a destroy is an invalidation: the shards it still
// held stay locked out for the session's LockDelay, because whoever
// destroyed it (an operator, a script) cannot know whether its worker is
// still acting. A worker that stops on purpose releases its shards first
// (Release sets no lock-delay), so its next owners start at once.
// Destroying a missing session does nothing and is not an error.
func (ss sessions) Destroy(ctx context.Context, id shard.SessionID) error {
	c := ss.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.catchUpLocked()

	if s, ok := c.sessions[id]; ok {
		c.endSessionLocked(s, now)
	}
	return nil
}

// liveSessionLocked returns the session, or an error wrapping
// shard.ErrSessionInvalid that names it.
func (c *Coordinator) liveSessionLocked(id shard.SessionID) (*session, error) {
	s, ok := c.sessions[id]
	if !ok {
		return nil, fmt.Errorf("%w: session %q does not exist (expired, destroyed or never created)",
			shard.ErrSessionInvalid, id)
	}
	return s, nil
}

// endSessionLocked removes the session at time at and releases, in one write,
// every key it holds: lock keys (shards', P/assignor), member keys and
// report keys keep their values but lose the session (Consul's
// Behavior=release). Each released lock is closed until at + LockDelay, so
// that a holder that merely lost contact has time to notice before anyone
// else can take over. No keys held, no write.
func (c *Coordinator) endSessionLocked(s *session, at time.Time) {
	delete(c.sessions, s.id)
	s.timer.Stop()

	var held []shard.Lock
	for lock, k := range c.locks {
		if k.session == s.id {
			held = append(held, lock)
		}
	}
	var members []*memberKey
	for _, m := range c.members {
		if m.session == s.id {
			members = append(members, m)
		}
	}
	var reports []*reportKey
	for _, byWorker := range c.reports {
		for _, r := range byWorker {
			if r.session == s.id {
				reports = append(reports, r)
			}
		}
	}
	if len(held) == 0 && len(members) == 0 && len(reports) == 0 {
		return
	}

	idx := c.commitLocked()
	for _, lock := range held {
		k := c.locks[lock]
		k.session, k.index = "", idx
		if s.spec.LockDelay > 0 {
			c.lockDelay[lock] = at.Add(s.spec.LockDelay)
		}
	}
	for _, m := range members {
		m.session, m.index = "", idx
		m.deadSince = at
		m.gcTimer = c.scheduleLocked(c.collectAt(m))
	}
	for _, r := range reports {
		r.session, r.index = "", idx
	}
}

// catchUpLocked applies every timed event that is due at Now, one write each,
// in the order of the moments they fell due: session expiries (at exactly
// their deadline) and deletions of dead member keys (at the end of their
// grace). Every operation calls it first, so the outcome of a call depends
// only on the clock's reading and never on whether a timer ran yet; the
// timers only make sure it also happens when nobody calls. It returns Now.
func (c *Coordinator) catchUpLocked() time.Time {
	now := c.clock.Now()
	for {
		ev, ok := c.nextDueLocked(now)
		if !ok {
			return now
		}
		if ev.session != nil {
			c.endSessionLocked(ev.session, ev.at)
		} else {
			c.collectMemberLocked(ev.member)
		}
	}
}

// dueEvent is a session expiry (session set) or a dead member's deletion.
type dueEvent struct {
	at      time.Time
	session *session
	member  string
}

// nextDueLocked finds the earliest event due at now. Ties are broken the same
// way every time (expiries first, then by session age or member ID), so that
// the indices events get do not depend on map order.
func (c *Coordinator) nextDueLocked(now time.Time) (dueEvent, bool) {
	var (
		best  dueEvent
		found bool
	)
	consider := func(ev dueEvent) {
		if ev.at.After(now) {
			return
		}
		if !found || eventBefore(ev, best) {
			best, found = ev, true
		}
	}
	for _, s := range c.sessions {
		consider(dueEvent{at: s.deadline, session: s})
	}
	for id, m := range c.members {
		if m.session == "" {
			consider(dueEvent{at: c.collectAt(m), member: id})
		}
	}
	return best, found
}

func eventBefore(a, b dueEvent) bool {
	if c := a.at.Compare(b.at); c != 0 {
		return c < 0
	}
	switch {
	case a.session != nil && b.session != nil:
		return a.session.seq < b.session.seq
	case a.session != nil || b.session != nil:
		return a.session != nil
	}
	return cmp.Less(a.member, b.member)
}

package sim

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

// jumpClock is the coordinator's clock: the bubble's clock plus an offset
// that only grows. A forward jump makes every session expire early as the
// workers measure time, which is what a worker whose monotonic clock missed
// a VM suspend, or a coordinator whose clock was stepped, looks like.
type jumpClock struct{ offset atomic.Int64 }

func (c *jumpClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// AfterFunc fires after d of the bubble's time; the offset only grows, so f
// never runs before the coordinator's Now reached the moment it was meant for.
func (c *jumpClock) AfterFunc(d time.Duration, f func()) memory.Timer { return time.AfterFunc(d, f) }

func (c *jumpClock) jump(d time.Duration) { c.offset.Add(int64(d)) }

// slowRenewals delays one worker's session renewals while latency is set:
// before the call reaches the coordinator or, with late set, after it was
// applied (the reply is slow). Either way the delay honours ctx, as an HTTP
// client would.
type slowRenewals struct {
	latency atomic.Int64 // time.Duration; 0: off
	late    atomic.Bool
}

func (s *slowRenewals) set(latency time.Duration, late bool) {
	s.late.Store(late)
	s.latency.Store(int64(latency))
}

// intercept is the delay, as a shard.Interceptor.
func (s *slowRenewals) intercept(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
	if call.Op != shard.OpRenewSession {
		return invoke(ctx)
	}
	d, late := time.Duration(s.latency.Load()), s.late.Load()
	if d > 0 && !late {
		if err := shard.Delay(ctx, d); err != nil {
			return err
		}
	}
	err := invoke(ctx)
	if d > 0 && late {
		if serr := shard.Delay(ctx, d); serr != nil {
			return serr // applied, but the worker never hears of it
		}
	}
	return err
}

// leases mirrors, from outside, each worker's local step-down deadline: the
// start of the last successful renewal (or of the session's creation) plus
// the policy's StepDownAfter, extended only by a renewal that succeeded
// before the deadline passed — the rule worker/lease.go implements. It also
// maps every claim to the session that got it, so a handler's claim tells
// which deadline binds it.
type leases struct {
	policy shard.LeasePolicy

	mu       sync.Mutex
	sessions map[shard.SessionID]*leaseRec
	claims   map[shard.Claim]shard.SessionID
}

type leaseRec struct {
	worker   string
	deadline time.Time // zero: not started (a slow create waits for its first renewal)
}

func newLeases(p shard.LeasePolicy) *leases {
	return &leases{policy: p, sessions: map[shard.SessionID]*leaseRec{}, claims: map[shard.Claim]shard.SessionID{}}
}

// deadline returns the local deadline of the session that got claim c.
func (l *leases) deadline(c shard.Claim) (shard.SessionID, time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sid, ok := l.claims[c]
	if !ok {
		return "", time.Time{}, false
	}
	r := l.sessions[sid]
	return sid, r.deadline, !r.deadline.IsZero()
}

// session returns the session that got claim c.
func (l *leases) session(c shard.Claim) (shard.SessionID, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sid, ok := l.claims[c]
	return sid, ok
}

// recorder is the outermost interceptor of a worker's coordinator: it
// sees what the worker sees, keeps leases and its member's latest session
// up to date, and checks every release against the handler runs.
type recorder struct {
	m    *member
	l    *leases
	runs *runLog
	c    *checker
}

func (r *recorder) intercept(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
	start := time.Now()
	err := invoke(ctx)
	if err != nil {
		return err
	}
	switch call.Op {
	case shard.OpCreateSession:
		r.created(call.Session, start)
	case shard.OpRenewSession:
		r.renewed(call.Session, start)
	case shard.OpAcquire:
		r.l.mu.Lock()
		for _, g := range call.Grants {
			if c, ok := g.Claim(); ok {
				r.l.claims[c] = call.Session
			}
		}
		r.l.mu.Unlock()
	case shard.OpRelease:
		var ids []shard.ID
		for _, lk := range call.Locks {
			if id, ok := lk.Shard(); ok {
				ids = append(ids, id)
			}
		}
		r.runs.released(call.Session, ids, r.c.elapsed())
	}
	return nil
}

// created starts the mirrored lease of a session created by a call that
// started at start.
func (r *recorder) created(sid shard.SessionID, start time.Time) {
	r.m.Ext.setSession(sid)
	rec := &leaseRec{worker: r.m.ID}
	// worker.term: a create slower than RenewEvery is followed by a renewal,
	// and the term counts from that renewal's start instead.
	if time.Since(start) <= r.l.policy.RenewEvery {
		rec.deadline = start.Add(r.l.policy.StepDownAfter())
	}
	r.l.mu.Lock()
	r.l.sessions[sid] = rec
	r.l.mu.Unlock()
}

// renewed extends the mirrored lease of sid after a renewal that started
// at start and succeeded.
func (r *recorder) renewed(sid shard.SessionID, start time.Time) {
	now := time.Now()
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	rec := r.l.sessions[sid]
	switch {
	case rec == nil:
	case rec.deadline.IsZero():
		rec.deadline = start.Add(r.l.policy.StepDownAfter())
	case !now.After(rec.deadline):
		// At exactly the deadline the worker's timer and the reply race;
		// counting the reply keeps this model the more lenient of the two.
		rec.deadline = maxTime(rec.deadline, start.Add(r.l.policy.StepDownAfter()))
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

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

// slowRenewals delays one worker's RenewSession calls while latency is set:
// before the call reaches the coordinator or, with late set, after it was
// applied (the reply is slow). Either way the delay honours ctx, as an HTTP
// client would.
type slowRenewals struct {
	shard.Coordinator
	latency atomic.Int64 // time.Duration; 0: off
	late    atomic.Bool
}

func (s *slowRenewals) set(latency time.Duration, late bool) {
	s.late.Store(late)
	s.latency.Store(int64(latency))
}

func (s *slowRenewals) RenewSession(ctx context.Context, id shard.SessionID) error {
	d, late := time.Duration(s.latency.Load()), s.late.Load()
	if d > 0 && !late {
		if err := sleep(ctx, d); err != nil {
			return err
		}
	}
	err := s.Coordinator.RenewSession(ctx, id)
	if d > 0 && late {
		if serr := sleep(ctx, d); serr != nil {
			return serr // applied, but the worker never hears of it
		}
	}
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
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

// recorder is the outermost wrapper of a worker's coordinator: it sees what
// the worker sees, keeps leases and its member's latest session up to
// date, and checks every release against the handler runs.
type recorder struct {
	shard.Coordinator
	m    *member
	l    *leases
	runs *runLog
	c    *checker
}

func (r *recorder) CreateSession(ctx context.Context, spec shard.SessionSpec) (shard.SessionID, error) {
	start := time.Now()
	sid, err := r.Coordinator.CreateSession(ctx, spec)
	if err != nil {
		return sid, err
	}
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
	return sid, nil
}

func (r *recorder) RenewSession(ctx context.Context, id shard.SessionID) error {
	start := time.Now()
	err := r.Coordinator.RenewSession(ctx, id)
	if err != nil {
		return err
	}
	now := time.Now()
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	rec := r.l.sessions[id]
	switch {
	case rec == nil:
	case rec.deadline.IsZero():
		rec.deadline = start.Add(r.l.policy.StepDownAfter())
	case !now.After(rec.deadline):
		// At exactly the deadline the worker's timer and the reply race;
		// counting the reply keeps this model the more lenient of the two.
		rec.deadline = maxTime(rec.deadline, start.Add(r.l.policy.StepDownAfter()))
	}
	return nil
}

func (r *recorder) Acquire(ctx context.Context, id shard.SessionID, want []shard.Acquisition) ([]shard.Claim, error) {
	got, err := r.Coordinator.Acquire(ctx, id, want)
	if err == nil {
		r.l.mu.Lock()
		for _, c := range got {
			r.l.claims[c] = id
		}
		r.l.mu.Unlock()
	}
	return got, err
}

func (r *recorder) Release(ctx context.Context, id shard.SessionID, ids []shard.ID, why string) error {
	err := r.Coordinator.Release(ctx, id, ids, why)
	if err == nil {
		r.runs.released(id, ids, r.c.elapsed())
	}
	return err
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

package chaos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// Holder is P/assignor as the harness saw it: who held it (both empty
// while it was free), from when, and when the harness saw it.
type Holder struct {
	Worker  string
	Session shard.SessionID
	Epoch   shard.Token
	// Since is when the holder took the lock, from the key's value (the
	// holder's clock; all processes share one machine); Seen when the
	// harness's watch returned it.
	Since, Seen time.Time
}

// At is when the holder took P/assignor: its Since when that is plausible
// (between from and Seen), else Seen, an upper bound.
func (h Holder) At(from time.Time) time.Time {
	if !h.Since.Before(from) && !h.Since.After(h.Seen) {
		return h.Since
	}
	return h.Seen
}

func (h Holder) String() string {
	if h.Session == "" {
		return "no one"
	}
	return fmt.Sprintf("%s (session %.8s, epoch %d)", h.Worker, h.Session, h.Epoch)
}

// assignorWatch follows P/assignor with blocking queries through a server,
// as a third party would: the scheduler picks the assignor faults' victim
// from it, and every change it saw is what the election figures read.
type assignorWatch struct {
	o *procfleet.Observer

	mu   sync.Mutex
	seen []Holder // every holder seen, in order; the last is the current one
}

// errMoved: P/assignor is no longer held by the worker the scheduler
// picked; the fault is put back rather than hitting a non-assignor.
var errMoved = errors.New("chaos: the assignor moved")

// watchAssignor starts following P/assignor through a running server until
// ctx ends; done is closed when the watch has stopped.
func (f *Fleet) watchAssignor(ctx context.Context) (*assignorWatch, <-chan struct{}, error) {
	o, err := f.observer()
	if err != nil {
		return nil, nil, err
	}
	a := &assignorWatch{o: o}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer o.Close() // its idle connections would outlive the test
		a.run(ctx)
	}()
	return a, done, nil
}

// run follows P/assignor (shard.Follow) until ctx ends; errors (a busy
// machine, an election) are retried with Follow's jittered backoff, as
// the workers' own watches are.
func (a *assignorWatch) run(ctx context.Context) {
	_ = shard.Follow(ctx, a.o.Assignor, shard.FollowOptions{}, func(k shard.LockKey) (time.Time, error) {
		a.record(holderOf(k, time.Now()))
		return time.Time{}, nil
	})
}

func holderOf(k shard.LockKey, seen time.Time) Holder {
	return Holder{Worker: k.Worker, Session: k.Session, Epoch: k.Token, Since: k.Since, Seen: seen}
}

// record appends h when the holder changed.
func (a *assignorWatch) record(h Holder) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := len(a.seen); n > 0 && a.seen[n-1].Session == h.Session && a.seen[n-1].Epoch == h.Epoch {
		return
	}
	a.seen = append(a.seen, h)
}

// current is the worker holding P/assignor as last seen, "" when free.
func (a *assignorWatch) current() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.seen) == 0 {
		return ""
	}
	return a.seen[len(a.seen)-1].Worker
}

// confirm reads P/assignor once, just before the fault: the watch may lag.
// errMoved when worker no longer holds it.
func (a *assignorWatch) confirm(ctx context.Context, worker string) (Holder, error) {
	k, err := a.o.Assignor(ctx, 0) // index 0: answers at once
	if err != nil {
		return Holder{}, fmt.Errorf("chaos: reading P/assignor to confirm %s holds it: %w", worker, err)
	}
	h := holderOf(k, time.Now())
	if h.Session == "" || h.Worker != worker {
		return h, fmt.Errorf("%w: picked %s, now held by %s", errMoved, worker, h)
	}
	return h, nil
}

// snapshot returns every holder seen so far.
func (a *assignorWatch) snapshot() []Holder {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Holder(nil), a.seen...)
}

// electWithin bounds the wait for a new assignor after an assignor fault:
// the victim's session ends within 2 × TTL and its lock-delay follows, so
// anything near this is a fleet that elects no one.
const electWithin = 30 * time.Second

// nextHolder is the first holder in seen, seen after from, with a session
// other than old's: the assignor elected after a fault on old.
func nextHolder(seen []Holder, old Holder, from time.Time) (Holder, bool) {
	for _, h := range seen {
		if h.Seen.After(from) && h.Session != "" && h.Session != old.Session {
			return h, true
		}
	}
	return Holder{}, false
}

// awaitElections fills Elected in every assignor fault once a new holder
// is seen, waiting up to electWithin past each fault's start.
func (a *assignorWatch) awaitElections(ctx context.Context, faults []Fault) {
	for {
		seen, waiting := a.snapshot(), false
		for i := range faults {
			f := &faults[i]
			if !f.Kind.assignor() || f.Err != "" || f.Elected.Session != "" {
				continue
			}
			if h, ok := nextHolder(seen, f.Assignor, f.Start); ok {
				f.Elected = h
			} else if time.Since(f.Start) < electWithin {
				waiting = true
			}
		}
		if !waiting || ctx.Err() != nil {
			return
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// AssignorProblems names every assignor fault after which no new assignor
// (another session on P/assignor) was seen within electWithin.
func AssignorProblems(faults []Fault) []string {
	var out []string
	for _, f := range faults {
		if f.Kind.assignor() && f.Err == "" && f.Elected.Session == "" {
			out = append(out, fmt.Sprintf("%s of %s at %s: no new assignor within %v (P/assignor was held by %s)",
				f.Kind, f.Target, f.Start.Format("15:04:05.000"), electWithin, f.Assignor))
		}
	}
	return out
}

// ElectedAfter is the time from an assignor fault to the new assignor's
// lock; false when none was elected (or f is no assignor fault).
func (f Fault) ElectedAfter() (time.Duration, bool) {
	if !f.Kind.assignor() || f.Elected.Session == "" {
		return 0, false
	}
	return f.Elected.At(f.Start).Sub(f.Start), true
}

// observer is a third party's observer of the fleet: through a running
// Consul server, or every etcd member.
func (f *Fleet) observer() (*procfleet.Observer, error) {
	if f.cfg.Etcd != nil {
		c, err := f.etcdCoordinator()
		if err != nil {
			return nil, fmt.Errorf("chaos: a client of etcd: %w", err)
		}
		return procfleet.NewObserverOn(c, f.cfg.Prefix), nil
	}
	servers := f.cfg.Cluster.Running()
	if len(servers) == 0 {
		return nil, errors.New("chaos: no Consul server running to watch P/assignor through")
	}
	o, err := procfleet.NewObserver(consul.Config{Address: servers[0].HTTPAddr, Scheme: "http", Token: servers[0].Token, Prefix: f.cfg.Prefix})
	if err != nil {
		return nil, fmt.Errorf("chaos: a client for %s: %w", servers[0].Name, err)
	}
	return o, nil
}

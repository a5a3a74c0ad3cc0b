package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// member is one worker of the demo fleet with its fault handles.
type member struct {
	id     string
	w      *worker.Worker
	faults *faults.Coordinator
	gate   faults.Gate // closed: the worker's commits are frozen on their way to the store
	dead   atomic.Bool // crashed: frozen handlers never wake to write
	cancel context.CancelFunc
	done   chan error
}

// spawn starts a worker named id.
func (d *demo) spawn(id string) error {
	coord, err := d.backend.Worker(id)
	if err != nil {
		return fmt.Errorf("demo: coordinator for %s: %w", id, err)
	}
	m := &member{id: id, faults: faults.Wrap(coord), done: make(chan error, 1)}
	w, err := worker.New(worker.Config{
		ID:           id,
		Fleet:        shard.Config{Shards: d.o.Shards},
		Coordinator:  m.faults,
		Offsets:      onTheWire{Store: d.store, m: m},
		Handler:      d.handler(m),
		Policy:       d.o.Policy,
		DrainTimeout: 2 * time.Second,
		Registerer:   d.reg,
		Logger:       d.o.Logger,
		JitterSeed:   d.rng.Uint64() | 1,
	})
	if err != nil {
		return err
	}
	m.w = w
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() { m.done <- w.Run(ctx) }()
	d.mu.Lock()
	d.members[id] = m
	d.order = append(d.order, id)
	d.mu.Unlock()
	return nil
}

// handler consumes the synthetic stream of each owned shard: every
// CommitEvery it takes everything up to the stream's head and commits the
// new offset with the claim's token. A pause can strike while a commit is
// on its way to the store (onTheWire), which is exactly the write a stale
// owner sends late; a commit begun after the worker's local deadline is
// refused by the claim itself (worker.ErrLost) and never sent.
func (d *demo) handler(m *member) worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
		d.store.started(c.Shard, c.Start.Offset)
		offset := c.Start.Offset
		every := d.o.CommitEvery
		tick := time.NewTimer(time.Duration(rand.Int64N(int64(every))))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				if errors.Is(context.Cause(ctx), worker.ErrRevoked) && !m.dead.Load() {
					// Handed off: commit what was processed, then return.
					_ = d.commit(ctx, c, max(offset, d.head()))
				}
				return nil
			case <-tick.C:
				tick.Reset(every/2 + time.Duration(rand.Int64N(int64(every))))
			}
			offset = max(offset, d.head())
			if m.dead.Load() {
				return nil // a crashed process never wakes up
			}
			if err := d.commit(ctx, c, offset); errors.Is(err, offsets.ErrStaleToken) || errors.Is(err, worker.ErrLost) {
				<-ctx.Done() // a newer owner fenced us, or our authority ended: stop acting for the shard
				return nil
			}
		}
	})
}

// commit sends one commit. It is sent even when ctx has just ended, as a
// write already on the wire would be: the fence, not the context, decides.
func (d *demo) commit(ctx context.Context, c *worker.Claim, offset int64) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	return c.Commit(cctx, offset)
}

// onTheWire is the offsets store as one member reaches it. While the
// member is paused its commits are frozen after they left the handler (and
// passed the claim's own authority check), and reach the store only when
// it resumes: late, with whatever token they carry, and cancelling them
// then cannot call them back. A crashed member's frozen commits never
// arrive.
type onTheWire struct {
	offsets.Store
	m *member
}

func (s onTheWire) Commit(ctx context.Context, sh shard.ID, tok shard.Token, offset int64) error {
	s.m.gate.Wait(context.Background())
	if s.m.dead.Load() {
		return fmt.Errorf("demo: %s crashed with this commit on its way: it never arrives", s.m.id)
	}
	return s.Store.Commit(context.WithoutCancel(ctx), sh, tok, offset)
}

// head is the synthetic stream's newest offset: every shard receives Rate
// messages per second from the start of the demo.
func (d *demo) head() int64 {
	return int64(time.Since(d.start).Seconds() * float64(d.o.Rate))
}

// live returns the members not crashed, in start order.
func (d *demo) live() []*member {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*member
	for _, id := range d.order {
		if m := d.members[id]; !m.dead.Load() {
			out = append(out, m)
		}
	}
	return out
}

// crash abandons a worker's session: every call it makes fails, its
// handlers freeze forever, and it never releases anything. Its shards move
// only when the coordinator expires the session.
func (d *demo) crash(m *member) string {
	n := len(m.w.Status().Owned())
	m.dead.Store(true)
	m.gate.Close()
	m.faults.Set(faults.Fail)
	m.cancel()
	return fmt.Sprintf("crash %s (session abandoned with %d shards)", m.id, n)
}

// pause freezes a worker (its coordinator calls and the commits on their
// way to the store) for d, then lets it resume: the frozen commits arrive
// late and meet the fence, and any begun after its local deadline are
// refused by the claims themselves.
func (d *demo) pause(m *member, pauseFor time.Duration) string {
	n := len(m.w.Status().Owned())
	m.gate.Close()
	m.faults.Set(faults.Hang)
	time.AfterFunc(pauseFor, func() {
		m.faults.Set(faults.Healthy)
		m.gate.Open()
		d.say("resume %s: its late commits meet the fence", m.id)
	})
	return fmt.Sprintf("pause %s for %v (past its %v TTL, %d shards, commits in flight)", m.id, pauseFor, d.o.Policy.TTL, n)
}

// stopAll shuts every worker down gracefully and waits for them.
func (d *demo) stopAll() {
	d.mu.Lock()
	all := make([]*member, 0, len(d.members))
	for _, id := range d.order {
		all = append(all, d.members[id])
	}
	d.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range all {
		wg.Go(func() {
			if !m.dead.Load() { // a crashed worker stays unreachable: it must not release
				m.faults.Set(faults.Healthy)
				m.gate.Open()
			}
			m.cancel()
			<-m.done
			m.gate.Open() // let a crashed worker's frozen handlers exit (they do not write)
		})
	}
	wg.Wait()
}

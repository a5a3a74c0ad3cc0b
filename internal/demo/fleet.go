package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/internal/inproc"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// member is one worker of the demo fleet with its fault handles.
type member = inproc.Member[struct{}]

// spawn starts a worker named id.
func (d *demo) spawn(id string) error {
	coord, err := d.backend.Worker(id)
	if err != nil {
		return fmt.Errorf("demo: coordinator for %s: %w", id, err)
	}
	m := d.fleet.New(id, coord)
	return d.fleet.Start(m, worker.Config{
		Fleet:        shard.Config{Shards: d.o.Shards},
		Coordinator:  m.Coordinator(),
		Offsets:      m.Wire(d.store),
		LocalOffsets: true, // every worker of the demo runs in this process
		Handler:      d.handler(m),
		Policy:       d.o.Policy,
		DrainTimeout: 2 * time.Second,
		Registerer:   d.reg,
		Logger:       d.o.Logger,
		JitterSeed:   d.rng.Uint64() | 1,
	})
}

// handler consumes the synthetic stream of each owned shard: every
// CommitEvery it takes everything up to the stream's head and commits the
// new offset with the claim's token. A pause can strike while a commit is
// on its way to the store (Member.Wire), which is exactly the write a stale
// owner sends late; a commit begun after the worker's local deadline is
// refused by the claim itself (worker.ErrLost) and never sent.
func (d *demo) handler(m *member) worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
		d.store.Started(c.Claim, c.Start)
		offset := c.Start.Offset
		every := d.o.CommitEvery
		tick := time.NewTimer(time.Duration(rand.Int64N(int64(every))))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				if errors.Is(context.Cause(ctx), worker.ErrRevoked) && !m.Crashed() {
					// Handed off: commit what was processed, then return.
					_ = d.commit(ctx, c, max(offset, d.head()))
				}
				return nil
			case <-tick.C:
				tick.Reset(every/2 + time.Duration(rand.Int64N(int64(every))))
			}
			offset = max(offset, d.head())
			if m.Crashed() {
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

// head is the synthetic stream's newest offset: every shard receives Rate
// messages per second from the start of the demo.
func (d *demo) head() int64 {
	return int64(time.Since(d.start).Seconds() * float64(d.o.Rate))
}

// crash abandons a worker's session: every call it makes fails, its
// handlers freeze forever, and it never releases anything. Its shards move
// only when the coordinator expires the session.
func (d *demo) crash(m *member) string {
	n := len(m.Worker().Status().Owned())
	m.Crash()
	return fmt.Sprintf("crash %s (session abandoned with %d shards)", m.ID, n)
}

// pause freezes a worker (its coordinator calls and the commits on their
// way to the store) for d, then lets it resume: the frozen commits arrive
// late and meet the fence, and any begun after its local deadline are
// refused by the claims themselves.
func (d *demo) pause(m *member, pauseFor time.Duration) string {
	n := len(m.Worker().Status().Owned())
	m.Hold("pause", inproc.Hold{Mode: faults.Hang, Freeze: true})
	time.AfterFunc(pauseFor, func() {
		m.Unhold("pause")
		d.say("resume %s: its late commits meet the fence", m.ID)
	})
	return fmt.Sprintf("pause %s for %v (past its %v TTL, %d shards, commits in flight)", m.ID, pauseFor, d.o.Policy.TTL, n)
}

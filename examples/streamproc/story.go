package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/shardlease/shardlease/offsets"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/examples/internal/netsim"
)

// options set the fleet, the stream and the timings.
type options struct {
	workers     int
	shards      int
	length      int64         // messages per shard
	pace        time.Duration // one message per pace, per shard
	commitEvery int64         // offsets are committed every so many messages
	killAt      float64       // the victim dies once this fraction of the stream is processed
	victim      string
	policy      shard.LeasePolicy
}

func defaultOptions() options {
	return options{
		workers: 12, shards: 128, length: 100, pace: 50 * time.Millisecond, commitEvery: 10, killAt: 0.4, victim: "w07",
		policy: shard.LeasePolicy{TTL: 2 * time.Second, RenewEvery: 400 * time.Millisecond, PauseBudget: time.Second, LockDelay: time.Second},
	}
}

// move is one of the dead worker's shards as it moved.
type move struct {
	shard               shard.ID
	to                  string
	oldToken, newToken  shard.Token
	committed, resumeAt int64 // the dead owner's last commit; where the new owner started
	reached             int64 // how far the dead owner had processed
}

// result is what the story ends with.
type result struct {
	opts             options
	victimShards     int
	moves            []move
	othersRestarted  []shard.ID // shards not the victim's whose handler started again after the death
	lost, repeats    int64
	incomplete       []shard.ID // shards whose committed offset is not the stream's end
	accepted         int
	rejected         int
	staleAccepted    int
	spreadBefore     int
	spreadAfter      int
	countsAfter      map[string]int
	victimOwnedAfter int
}

// check verifies the outcome the story promises.
func (r result) check() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if r.lost != 0 {
		add("%d messages never processed", r.lost)
	}
	if len(r.incomplete) != 0 {
		add("shards not consumed to the end: %v", r.incomplete)
	}
	if r.staleAccepted != 0 {
		add("%d commits accepted from superseded owners", r.staleAccepted)
	}
	if r.victimShards == 0 || len(r.moves) != r.victimShards {
		add("%d of the dead worker's %d shards moved", len(r.moves), r.victimShards)
	}
	for _, m := range r.moves {
		if m.newToken <= m.oldToken || m.resumeAt != m.committed || m.to == r.opts.victim {
			add("%s moved to %s with token %d (was %d), resuming at %d (committed %d)", m.shard, m.to, m.newToken, m.oldToken, m.resumeAt, m.committed)
		}
	}
	if len(r.othersRestarted) != 0 {
		add("shards that were not the dead worker's moved too: %v", r.othersRestarted)
	}
	// At-least-once: what is processed twice is at most what the dead
	// worker processed after its last commit on each shard.
	var bound int64
	for _, m := range r.moves {
		bound += m.reached - m.committed
	}
	if r.repeats > bound {
		add("%d messages processed twice, more than the %d the dead worker processed after its last commits", r.repeats, bound)
	}
	if r.spreadAfter > 1 || r.victimOwnedAfter != 0 {
		add("after the move: spread %d (want ≤ 1), the dead worker owns %d", r.spreadAfter, r.victimOwnedAfter)
	}
	if len(problems) > 0 {
		return fmt.Errorf("the story did not end as it must: %v", problems)
	}
	return nil
}

// started is a handler start, as the story records it.
type started struct {
	worker string
	token  shard.Token
	from   int64
	at     time.Time
}

type story struct {
	o    options
	out  io.Writer
	sink *sink

	mu     sync.Mutex
	starts map[shard.ID][]started

	// death orders a host's death against its handlers' processing: a
	// handler checks that its host is alive and processes under the read
	// lock, the kill takes the write lock, so once the kill returns the
	// dead worker processes nothing more, and how far it got is final.
	death sync.RWMutex
}

// processAlive processes message off of shard id for host h unless h is
// dead, and reports whether it did.
func (s *story) processAlive(h *netsim.Host, id shard.ID, off int64) bool {
	s.death.RLock()
	defer s.death.RUnlock()
	if h.Get() == netsim.Dead {
		return false
	}
	s.sink.process(id, off)
	return true
}

func (s *story) say(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, format+"\n", args...)
}

// run plays the story once and prints its transcript to out.
func run(ctx context.Context, o options, out io.Writer) (result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := result{opts: o}
	fleet := shard.Config{Shards: o.shards}
	ids := fleet.IDs()
	s := &story{o: o, out: out, sink: newSink(ids, o.length), starts: map[shard.ID][]started{}}
	coord := memory.New()
	base := offmem.New()
	defer base.Close()
	audit := newAuditor(base)

	s.say("%d workers, %d shards, %d messages per shard (%d in all); offsets committed every %d messages with the shard's token",
		o.workers, o.shards, o.length, int64(o.shards)*o.length, o.commitEvery)
	hosts := map[string]*netsim.Host{}
	var running sync.WaitGroup
	stopAll := func() {
		for _, h := range hosts {
			close(h.Gone)
		}
		cancel()
		running.Wait()
	}
	for i := 1; i <= o.workers; i++ {
		h := netsim.NewHost(fmt.Sprintf("w%02d", i))
		hosts[h.ID] = h
		w, err := worker.New(worker.Config{
			ID: h.ID, Fleet: fleet,
			Coordinator: netsim.Coordinator(coord, h),
			Offsets:     netsim.Store{Store: audit, H: h},
			Handler:     s.handler(h),
			Policy:      o.policy, DrainTimeout: 2 * time.Second,
			LocalOffsets: true,         // every worker of the story runs in this process, on Consul too
			Logger:       zap.NewNop(), // the story tells what happens
		})
		if err != nil {
			stopAll()
			return res, err
		}
		running.Go(func() {
			if err := w.Run(ctx); err != nil {
				s.say("%s stopped with an error: %v", h.ID, err)
			}
		})
	}
	err := s.script(ctx, coord, base, hosts[o.victim], ids, &res)
	stopAll()
	if err != nil {
		return res, err
	}
	res.accepted, res.rejected, res.staleAccepted = audit.counts()
	verdict := "as promised"
	if err := res.check(); err != nil {
		verdict = err.Error()
	}
	s.say("commits: %d accepted, %d refused as stale, %d accepted from a superseded owner: %s",
		res.accepted, res.rejected, res.staleAccepted, verdict)
	return res, nil
}

// script: wait for a balanced fleet and some progress, kill the victim,
// follow its shards to their new owners, and wait for the end of the stream.
func (s *story) script(ctx context.Context, coord *memory.Coordinator, base offsets.Store, victim *netsim.Host, ids []shard.ID, res *result) error {
	total := int64(len(ids)) * s.o.length
	snap, err := s.waitFor(ctx, coord, func(snap shard.Snapshot) bool {
		counts := snap.Counts()
		return len(snap.Owners()) == len(ids) && len(counts) == s.o.workers && spread(counts) <= 1
	})
	if err != nil {
		return err
	}
	res.spreadBefore = spread(snap.Counts())
	s.say("balanced: all %d shards owned, %s per worker", len(ids), rangeOf(snap.Counts()))

	for s.sink.processed() < int64(s.o.killAt*float64(total)) {
		if !sleep(ctx, 50*time.Millisecond) {
			return errors.New("interrupted")
		}
	}
	s.death.Lock()
	victim.Set(netsim.Dead)
	s.death.Unlock()
	died := time.Now()
	snap, err = coord.Fleet().Watch(ctx, 0)
	if err != nil {
		return err
	}
	doomed := map[shard.ID]move{}
	for id, owner := range snap.Owners() {
		if owner != victim.ID {
			continue
		}
		st, _ := snap.Shard(id)
		cp, err := base.Load(ctx, id)
		if err != nil {
			return err
		}
		doomed[id] = move{shard: id, oldToken: st.Token, committed: cp.Offset, reached: s.sink.highest(id)}
	}
	res.victimShards = len(doomed)
	s.say("*** %s dies holding %d shards, %d of %d messages processed in all; its shards wait for its session to expire",
		victim.ID, len(doomed), s.sink.processed(), total)

	// Follow each doomed shard to its next handler start.
	for len(res.moves) < len(doomed) {
		if !sleep(ctx, 50*time.Millisecond) {
			return errors.New("interrupted")
		}
		res.moves = res.moves[:0]
		for id, m := range doomed {
			if st, ok := s.startAfter(id, died); ok {
				m.to, m.newToken, m.resumeAt = st.worker, st.token, st.from
				res.moves = append(res.moves, m)
			}
		}
	}
	sort.Slice(res.moves, func(i, j int) bool { return res.moves[i].shard < res.moves[j].shard })
	receivers := map[string]bool{}
	for _, m := range res.moves {
		receivers[m.to] = true
		s.say("%s: %s → %s, token %d → %d, resumes at offset %d (its committed offset; %s had processed up to %d)",
			m.shard, victim.ID, m.to, m.oldToken, m.newToken, m.resumeAt, victim.ID, m.reached)
	}
	s.say("%d shards moved, to %d workers, %v after the death", len(res.moves), len(receivers), time.Since(died).Round(100*time.Millisecond))

	// Wait for the end of every shard's stream.
	for {
		done := true
		for _, id := range ids {
			if cp, err := base.Load(ctx, id); err != nil || cp.Offset < s.o.length {
				done = false
				break
			}
		}
		if done {
			break
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return errors.New("interrupted")
		}
	}
	for _, id := range ids {
		if _, moved := doomed[id]; moved {
			continue
		}
		if _, ok := s.startAfter(id, died); ok {
			res.othersRestarted = append(res.othersRestarted, id)
		}
		if cp, _ := base.Load(ctx, id); cp.Offset != s.o.length {
			res.incomplete = append(res.incomplete, id)
		}
	}
	// The moved shards' streams may end before the rebalance rounds that
	// follow a failover are over: give the fleet a few rounds to settle.
	settleCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	snap, err = s.waitFor(settleCtx, coord, func(snap shard.Snapshot) bool {
		counts := snap.Counts()
		delete(counts, victim.ID)
		return len(snap.Owners()) == len(ids) && spread(counts) <= 1
	})
	cancel()
	if err != nil { // not settled in time: judge the fleet as it is now
		if snap, err = coord.Fleet().Watch(ctx, 0); err != nil {
			return err
		}
	}
	res.countsAfter = snap.Counts()
	res.victimOwnedAfter = res.countsAfter[victim.ID]
	delete(res.countsAfter, victim.ID)
	res.spreadAfter = spread(res.countsAfter)
	res.lost, res.repeats = s.sink.tally()
	s.say("stream consumed: every shard at offset %d; %d messages lost, %d processed twice (after the dead worker's last commits)",
		s.o.length, res.lost, res.repeats)
	s.say("balanced again: %s per worker over the %d survivors; only %s's shards moved", rangeOf(res.countsAfter), len(res.countsAfter), victim.ID)
	return nil
}

// handler consumes a shard's stream from the committed offset.
func (s *story) handler(h *netsim.Host) worker.HandlerFunc {
	return func(ctx context.Context, c *worker.Claim) error {
		s.mu.Lock()
		s.starts[c.Shard] = append(s.starts[c.Shard], started{worker: h.ID, token: c.Token, from: c.Start.Offset, at: time.Now()})
		s.mu.Unlock()
		off := c.Start.Offset
		for off < s.o.length {
			if !sleep(ctx, s.o.pace) {
				if errors.Is(context.Cause(ctx), worker.ErrRevoked) {
					// Handed off: commit what was processed, then return.
					_ = c.Commit(context.WithoutCancel(ctx), off)
				}
				return nil // lost: return at once, commits would be refused
			}
			if !s.processAlive(h, c.Shard, off) {
				<-h.Gone // the process is gone
				return nil
			}
			off++
			if off%s.o.commitEvery == 0 || off == s.o.length {
				if err := c.Commit(ctx, off); errors.Is(err, offsets.ErrStaleToken) {
					return err // a newer owner fenced the shard: stop acting for it
				}
			}
		}
		<-ctx.Done()
		return nil
	}
}

// startAfter returns the first handler start of id after t.
func (s *story) startAfter(id shard.ID, t time.Time) (started, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.starts[id] {
		if st.at.After(t) {
			return st, true
		}
	}
	return started{}, false
}

// waitFor follows the fleet (shard.Follow: a blocking query per change)
// until ok holds, and returns the snapshot that satisfied it, or the last
// one seen with an error: the first failed read's, or "interrupted" when
// ctx ends.
func (s *story) waitFor(ctx context.Context, coord *memory.Coordinator, ok func(shard.Snapshot) bool) (shard.Snapshot, error) {
	var snap shard.Snapshot
	met := false
	err := shard.Follow(ctx, coord.Fleet().Watch, shard.FollowOptions{OnError: func(error) bool { return false }}, func(got shard.Snapshot) (time.Time, error) {
		snap, met = got, ok(got)
		if met {
			return time.Time{}, shard.ErrStopFollowing
		}
		return time.Time{}, nil
	})
	switch {
	case err != nil:
		return snap, err
	case !met:
		return snap, errors.New("interrupted")
	}
	return snap, nil
}

func spread(counts map[string]int) int {
	if len(counts) == 0 {
		return 0
	}
	var ns []int
	for _, n := range counts {
		ns = append(ns, n)
	}
	return slices.Max(ns) - slices.Min(ns)
}

func rangeOf(counts map[string]int) string {
	var ns []int
	for _, n := range counts {
		ns = append(ns, n)
	}
	lo, hi := slices.Min(ns), slices.Max(ns)
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d or %d", lo, hi)
}

// sleep waits for d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/shard"
)

// reshardShare is the share of seeds that reshard during their faults.
const reshardShare = 1.0 / 3

// reshardGap is the least time between two reshards of a seed: enough for
// the first to finish unless a fault keeps a parent from closing (a
// crashed owner's session must expire first), in which case the second
// is refused.
const reshardGap = 15 * time.Second

// maxReshardShards bounds the shard count a reshard goes to.
const maxReshardShards = 64

// addReshards lays reshards over a generated schedule, from a random
// stream of their own, as addDestroys does and for the same reason: every
// event of every seed stays where it was, and so does FaultsEnd (the
// zone outage and the loads are drawn from it). In a third of the seeds,
// one or two Reshard events fall among the faults: the first in the first
// half of the main generator's steps, the second reshardGap to twice that
// later, both before FaultsEnd. Each goes to a count drawn from the one
// before (assuming the reshards before it went through): twice, half,
// three halves, two thirds or three quarters of it, between 4 and
// maxReshardShards, different from every count before and sharing a
// factor with each, so that under lineage mod a child has some parents,
// not all, whichever reshards before it were cancelled or refused. One
// reshard in four is of lineage range, the others mod. Two reshards in
// five are followed, up to 4 s later, by a ReshardCancel, which is
// refused if a child opened by then.
func (s *Schedule) addReshards(steps []time.Duration) {
	rng := rand.New(rand.NewPCG(s.Seed, s.Seed^0x7e5ba7d5e7a7d00d))
	if rng.Float64() >= reshardShare || len(steps) == 0 {
		return
	}
	draw := betweenIn(rng)
	between := func(lo, hi time.Duration) time.Duration { return draw(lo, hi).Round(time.Millisecond) }
	limit := s.FaultsEnd // no event at or past it
	counts := []int{s.Setup.Shards}
	t := steps[rng.IntN((len(steps)+1)/2)] + between(time.Millisecond, time.Second)
	for n := 1 + rng.IntN(2); n > 0 && t < limit; n-- {
		to, ok := nextCount(rng, counts)
		if !ok {
			break
		}
		e := Event{At: t, Kind: Reshard, Shards: to, Lineage: shard.LineageMod}
		if rng.IntN(4) == 0 {
			e.Lineage = shard.LineageRange
		}
		s.Events = append(s.Events, e)
		counts = append(counts, to)
		s.Setup.MostShards = max(s.Setup.MostShards, s.Setup.Shards, to)
		if rng.IntN(5) < 2 {
			if c := t + between(0, 4*time.Second); c < limit {
				s.Events = append(s.Events, Event{At: c, Kind: ReshardCancel})
			}
		}
		t += between(reshardGap, 2*reshardGap)
	}
}

// nextCount draws the shard count of the next reshard from the last of
// counts: a multiple by 2, 1/2, 3/2, 2/3 or 3/4 that is whole, in
// 4..maxReshardShards, not among counts, and has a factor in common
// with each of them.
func nextCount(rng *rand.Rand, counts []int) (int, bool) {
	last := counts[len(counts)-1]
	var out []int
	for _, f := range [][2]int{{2, 1}, {1, 2}, {3, 2}, {2, 3}, {3, 4}} {
		if last*f[0]%f[1] != 0 {
			continue
		}
		m := last * f[0] / f[1]
		if m < 4 || m > maxReshardShards || slices.Contains(counts, m) ||
			slices.ContainsFunc(counts, func(c int) bool { return gcd(c, m) == 1 }) {
			continue
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return 0, false
	}
	return out[rng.IntN(len(out))], true
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// ReshardResult is what a seed's reshards did.
type ReshardResult struct {
	// Started and Refused count the Reshard events that started a
	// reshard, and those refused (admin.ErrResharding: another one ran,
	// or a shard closed by a cancelled one had not run since); Done the
	// reshards that finished by the end of the run.
	Started, Refused, Done int
	// Cancelled and CancelRefused count the ReshardCancel events that
	// cancelled a reshard, and those refused (a child had opened, or no
	// reshard ran).
	Cancelled, CancelRefused int
	// Closes counts the parents' handlers that closed their shard
	// (Claim.Close succeeded), LateCloses those of them that went on a
	// few steps after being asked; ChildStarts the handler starts of
	// children, each given its parents' checkpoints.
	Closes, LateCloses, ChildStarts int64
	// Reopened counts the handler starts of a closed parent taken back
	// by a worker before any of its children opened, in a reshard not
	// cancelled (lineage.reopened).
	Reopened int64
	// Unreleased counts the closed parents whose release as closed
	// failed (lineage.releaseFailed), which their workers must take and
	// close again.
	Unreleased int64
}

// reshards is the run's record of its reshards.
type reshards struct {
	res                             ReshardResult
	closes, lateCloses, childStarts atomic.Int64
	unasked                         atomic.Int64 // closes refused: the reshard was cancelled after the ask
}

// operator is how the sim acts as a fleet's operator.
func (r *run) operator() admin.Operator {
	return admin.Operator{Coordinator: r.coord, Name: "sim", By: "sim"}
}

// reshard plays a Reshard or a ReshardCancel. A reshard refused because
// another one runs, or a cancel refused because a child opened (or none
// runs), is part of the game: it is counted, not a violation.
func (r *run) reshard(e Event) {
	ctx := context.Background()
	op := r.operator()
	if e.Kind == ReshardCancel {
		stored, err := op.CancelReshard(ctx, "the sim's schedule")
		switch {
		case err == nil:
			r.reshards.res.Cancelled++
			r.lineage.setConfig(stored)
			r.tracef("  cancelled: the fleet runs %d shards again", current(stored))
		case errors.Is(err, admin.ErrChildOpen) || errors.Is(err, admin.ErrResharding) || errors.Is(err, shard.ErrConfigChanged):
			r.reshards.res.CancelRefused++
			r.tracef("  refused: %v", err)
		default:
			r.c.violate("cancelling the reshard: %v", err)
		}
		return
	}
	stored, err := op.Reshard(ctx, admin.ReshardPlan{Shards: e.Shards, Lineage: e.Lineage, Reason: "the sim's schedule"})
	switch {
	case err == nil:
		r.reshards.res.Started++
		r.lineage.setConfig(stored)
		l := stored.Layouts[len(stored.Layouts)-1]
		r.tracef("  resharding: %d shards become %d named %s-*", r.layoutBefore(stored), l.Shards, l.Name)
	case errors.Is(err, admin.ErrResharding) || errors.Is(err, shard.ErrConfigChanged):
		r.reshards.res.Refused++
		r.tracef("  refused: %v", err)
	default:
		r.c.violate("starting a reshard to %d shards: %v", e.Shards, err)
	}
}

// current is the shard count of cfg's current layout.
func current(cfg shard.Config) int {
	n, _ := cfg.Current()
	return n
}

// layoutBefore is the shard count of the parents of cfg's reshard in
// progress.
func (r *run) layoutBefore(cfg shard.Config) int {
	if segs := cfg.Segments(); len(segs) == 2 {
		return segs[0].Shards
	}
	return current(cfg)
}

// storedConfig is the fleet's config as stored now (the first shard set
// before any worker stored one).
func (r *run) storedConfig() shard.Config {
	snap, err := r.coord.Fleet().Watch(context.Background(), 0)
	if err != nil || snap.Config == nil {
		return shard.Config{Shards: r.sched.Setup.Shards}
	}
	return *snap.Config
}

// finishReshards counts, at the end of the run, the reshards that were
// done.
func (r *run) finishReshards() ReshardResult {
	res := r.reshards.res
	if cfg := r.snapshot().Config; cfg != nil {
		for _, l := range cfg.Layouts {
			if l.Done {
				res.Done++
			}
		}
	}
	res.Closes, res.LateCloses, res.ChildStarts = r.reshards.closes.Load(), r.reshards.lateCloses.Load(), r.reshards.childStarts.Load()
	res.Reopened, res.Unreleased = r.lineage.reopens.Load(), r.lineage.unreleased.Load()
	return res
}

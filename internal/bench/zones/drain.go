package zones

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/internal/offsetlog"
	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// drainFigures are zone-drain's samples, one per trial.
type drainFigures struct {
	gap      []float64 // the longest time a shard had no running handler, s
	inFlight []float64 // the most hand-offs in flight at once
	budget   []float64 // the fleet's move budget
	empty    []float64 // until the zone owned nothing, s
	moves    []float64 // handler runs followed by one on another worker
}

func runDrain(ctx context.Context, env *bench.Env, p Params) ([]bench.Result, error) {
	var fig drainFigures
	err := drainTrials(ctx, env, p, &fig)
	if len(fig.gap) == 0 {
		return nil, err
	}
	budget := fig.budget[0]
	common := func(r bench.Result) bench.Result {
		r = r.WithPolicy(bench.PolicyDefault, shard.DefaultPolicy).With("move_budget", budget).
			WithNote(fmt.Sprintf("%d `shardd worker` processes × %d shards in %d zones of %d; one zone drained (admin DrainZone, as shardctl drain --zone) until it owns nothing, then undrained, the zones in turn",
				p.Fleet.Workers, p.Fleet.Shards, p.Zones, p.Fleet.Workers/p.Zones))
		if err != nil {
			r = r.WithNote(fmt.Sprintf("only %d trials: %v", len(fig.gap), err))
		}
		return r
	}
	gap := common(bench.Measured(DrainName, bench.SystemShardlease, "a zone drained and back: longest time a shard has no running handler", "s", fig.gap)).
		With("moves_p50", bench.Percentile(fig.moves, 50)).
		WithNote("over every shard, from a handler's end line to the shard's next start line in the workers' histories (wall clocks of one machine), from the drain until the zone is back at rest")
	inFlight := common(bench.Measured(DrainName, bench.SystemShardlease, "a zone drained: hand-offs in flight at once, at most", "hand-offs", fig.inFlight)).
		WithNote("shards held by a worker whose assignment key no longer lists them (fleetview, as shardctl status counts them), at every listing during the drain")
	empty := common(bench.Measured(DrainName, bench.SystemShardlease, "a zone drained: until it owns nothing", "s", fig.empty))
	return []bench.Result{
		gap.WithGoal("max <= 0.1s", gap.Max <= 0.1),
		inFlight.WithGoal(fmt.Sprintf("max <= the budget, %v", budget), inFlight.Max <= budget),
		empty,
	}, err
}

// drainTrials runs the trials on one fleet, appending each to fig.
func drainTrials(ctx context.Context, env *bench.Env, p Params, fig *drainFigures) error {
	f, err := startZones(ctx, env, DrainName, p, shard.DefaultPolicy)
	if err != nil {
		return err
	}
	defer f.Close()
	c, err := consul.New(env.CoordConfig(f.Prefix()))
	if err != nil {
		return err
	}
	defer c.Close()
	op := admin.Operator{Coordinator: c, Name: f.Prefix(), By: "shardbench"}
	for t := range max(env.Trials, p.MinTrials) {
		z := f.zones[t%len(f.zones)]
		if err := f.drain(ctx, env, c, op, z, fig); err != nil {
			return fmt.Errorf("trial %d, %s: %w", t+1, z, err)
		}
	}
	return nil
}

// drain drains zone z until it owns nothing, undrains it until the fleet
// is at rest again, and measures.
func (f *zoneFleet) drain(ctx context.Context, env *bench.Env, c shard.Coordinator, op admin.Operator, z string, fig *drainFigures) error {
	watchCtx, stopWatch := context.WithCancel(ctx)
	var (
		mu       sync.Mutex
		inFlight int
		budget   int
	)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		_ = shard.Follow(watchCtx, c.Fleet().Watch, shard.FollowOptions{}, func(s shard.Snapshot) (time.Time, error) {
			v := fleetview.Build(fleetview.Input{Snapshot: s, Now: time.Now()})
			b := v.Queue.Budget
			if b == 0 { // no policy stored: the assignor's default, as its worker's config leaves it
				b = rebalance.DefaultMaxMovesInFlight(f.size.Shards, v.Summary.Live)
			}
			mu.Lock()
			inFlight, budget = max(inFlight, v.Summary.HandOffs), b
			mu.Unlock()
			return time.Time{}, nil
		})
	}()
	defer func() { stopWatch(); <-watched }()

	t0 := time.Now()
	ds, err := op.DrainZone(ctx, z)
	if err != nil {
		return err
	}
	_, t1, err := fleet.WaitFor(ctx, f, fleet.SettleWithin, z+" owns nothing, every shard owned", func(v procfleet.View) bool {
		if v.OwnedByMembers() != f.size.Shards {
			return false
		}
		for _, w := range v.Owners {
			if f.zone[w] == z {
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	stopWatch()
	<-watched
	if _, err := op.UndrainZone(ctx, z); err != nil {
		return err
	}
	if _, err := f.atRest(ctx, nil); err != nil {
		return err
	}
	ivs, err := f.HandlerRuns(ctx, f.size.Shards)
	if err != nil {
		return err
	}
	moves, longest, where := offsetlog.Handoffs(ivs, t0.UnixNano())
	mu.Lock()
	fig.inFlight = append(fig.inFlight, float64(inFlight))
	fig.budget = append(fig.budget, float64(budget))
	mu.Unlock()
	fig.gap = append(fig.gap, longest.Seconds())
	fig.empty = append(fig.empty, t1.Sub(t0).Seconds())
	fig.moves = append(fig.moves, float64(moves))
	env.Logf("shardbench: %s: %s (%d workers) drained in %v and back: %d moves, the longest without a handler %v (%s), at most %d hand-offs in flight of a budget of %d",
		DrainName, z, len(ds), t1.Sub(t0).Round(time.Millisecond), moves, longest.Round(time.Millisecond), where, inFlight, budget)
	return nil
}

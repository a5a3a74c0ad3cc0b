package zones

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/shard"
)

// outageFigures are zone-outage's samples, one per trial.
type outageFigures struct {
	owned    []float64 // until the zone's shards are all owned again, s
	handlers []float64 // until their new handlers all run, s
	moved    []float64 // shards of the other zones that changed owner
	offShare []float64 // the furthest zone from its share, at rest after, shards
	shards   []float64 // how many shards the zone held
}

func runOutage(ctx context.Context, env *bench.Env, p Params) ([]bench.Result, error) {
	var fig outageFigures
	err := outageTrials(ctx, env, p, &fig)
	if len(fig.owned) == 0 {
		return nil, err
	}
	common := func(r bench.Result) bench.Result {
		r = r.WithPolicy(bench.PolicyFast, shard.FastPolicy).With("zone_shards_p50", bench.Percentile(fig.shards, 50)).
			WithNote(fmt.Sprintf("%d `shardd worker` processes × %d shards in %d zones of %d; every worker of one zone kill -9'd at once, the zones in turn",
				p.Fleet.Workers, p.Fleet.Shards, p.Zones, p.Fleet.Workers/p.Zones))
		if err != nil {
			r = r.WithNote(fmt.Sprintf("only %d trials: %v", len(fig.owned), err))
		}
		return r
	}
	owned := common(bench.Measured(OutageName, bench.SystemShardlease, "a zone's workers all kill -9'd: until its shards are all owned again", "s", fig.owned))
	handlers := common(bench.Measured(OutageName, bench.SystemShardlease, "a zone's workers all kill -9'd: until their new handlers all run", "s", fig.handlers)).
		WithNote("the workers' own start lines, after each claim's fence")
	moved := common(bench.Measured(OutageName, bench.SystemShardlease, "shards of the other zones that changed owner during a zone's outage", "shards", fig.moved)).
		WithNote("every observer view from the kill until the zone's shards are owned again")
	off := common(bench.Measured(OutageName, bench.SystemShardlease, "furthest surviving zone from its capacity's share, at rest after a zone's outage", "shards", fig.offShare))
	return []bench.Result{
		owned.WithGoal("p99 <= 3s", owned.P99 <= 3),
		handlers,
		moved.WithGoal("max = 0", moved.Max == 0),
		off.WithGoal("max <= 1", off.Max <= 1),
	}, err
}

// outageTrials runs the trials on one fleet, appending each to fig.
func outageTrials(ctx context.Context, env *bench.Env, p Params, fig *outageFigures) error {
	f, err := startZones(ctx, env, OutageName, p, shard.FastPolicy)
	if err != nil {
		return err
	}
	defer f.Close()
	for t := range max(env.Trials, p.MinTrials) {
		z := f.zones[t%len(f.zones)]
		if err := f.outage(ctx, env, z, fig); err != nil {
			return fmt.Errorf("trial %d, %s: %w", t+1, z, err)
		}
	}
	return nil
}

// outage takes zone z away, measures, and brings it back.
func (f *zoneFleet) outage(ctx context.Context, env *bench.Env, z string, fig *outageFigures) error {
	before, err := f.View(ctx, 0)
	if err != nil {
		return err
	}
	victims := f.workersIn(z)
	var lost []string
	for s, w := range before.Owners {
		if f.zone[w] == z {
			lost = append(lost, s)
		}
	}
	slices.Sort(lost)
	moved := map[string]bool{}
	t0 := time.Now()
	for _, id := range victims {
		f.Crash(id)
	}
	_, t1, err := fleet.WaitFor(ctx, f, 30*time.Second, fmt.Sprintf("%s's %d shards owned again", z, len(lost)), func(v procfleet.View) bool {
		for s, w := range v.Owners {
			if old := before.Owners[s]; f.zone[old] != z && w != old {
				moved[s] = true
			}
		}
		for _, s := range lost {
			if w, ok := v.Owners[s]; !ok || f.zone[w] == z {
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	started, err := f.handlersRunning(ctx, lost, t0)
	if err != nil {
		return err
	}
	rest, err := f.atRest(ctx, victims)
	if err != nil {
		return err
	}
	fig.owned = append(fig.owned, t1.Sub(t0).Seconds())
	fig.handlers = append(fig.handlers, started.Sub(t0).Seconds())
	fig.moved = append(fig.moved, float64(len(moved)))
	fig.offShare = append(fig.offShare, f.offShare(rest))
	fig.shards = append(fig.shards, float64(len(lost)))
	env.Logf("shardbench: %s: %s's %d workers killed: its %d shards owned again after %v, handlers all running after %v; %d shards of other zones moved; at rest %.1f shards off a zone's share",
		OutageName, z, len(victims), len(lost), t1.Sub(t0).Round(time.Millisecond), started.Sub(t0).Round(time.Millisecond), len(moved), f.offShare(rest))
	for _, id := range victims {
		if err := f.Add(ctx, id); err != nil {
			return err
		}
	}
	_, err = f.atRest(ctx, nil)
	return err
}

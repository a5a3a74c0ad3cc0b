package zones

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/shard"
)

// The scenarios' names on the command line and in their rows.
const (
	OutageName = "zone-outage"
	DrainName  = "zone-drain"
)

// Params are a zone scenario's fleet, zones and trials.
type Params struct {
	Fleet fleet.Size
	Zones int
	// MinTrials is the least number of trials, whatever --trials says;
	// the zones take turns.
	MinTrials int
}

// Sizes are the zone scenarios' at full size and for a smoke run.
var Sizes = bench.Sizes[Params]{
	Full:  Params{Fleet: fleet.Common, Zones: 3, MinTrials: 6},
	Small: Params{Fleet: fleet.CommonSmall, Zones: 3, MinTrials: 1},
}

// OutageScenario is zone-outage.
var OutageScenario = bench.Declare(OutageName,
	"12 `shardd worker` processes in 3 zones over 128 shards on shard.FastPolicy; every worker of one zone kill -9'd at once (zones in turn, ≥ 6 trials): until its shards are owned again and their handlers run, shards of other zones moved, zone shares after",
	Sizes, runOutage)

// DrainScenario is zone-drain.
var DrainScenario = bench.Declare(DrainName,
	"12 `shardd worker` processes in 3 zones over 128 shards; one zone drained and undrained (zones in turn, ≥ 6 trials): the longest time a shard has no running handler, hand-offs in flight against the move budget, the time to empty the zone",
	Sizes, runDrain)

// zoneFleet is a fleet of worker processes, each in a zone.
type zoneFleet struct {
	*fleet.Procs
	size  fleet.Size
	zone  map[string]string // worker → zone
	zones []string
}

// zoneName is the i-th zone's name.
func zoneName(i int) string { return fmt.Sprintf("zone-%c", 'a'+i) }

// startZones starts size's workers, worker i in zone i mod zones, and
// waits until the fleet is at rest.
func startZones(ctx context.Context, env *bench.Env, scenario string, p Params, policy shard.LeasePolicy) (*zoneFleet, error) {
	pf, err := fleet.NewProcs(env, bench.SystemShardlease, scenario, p.Fleet.Shards, policy, false)
	if err != nil {
		return nil, err
	}
	f := &zoneFleet{Procs: pf, size: p.Fleet, zone: map[string]string{}}
	for z := range p.Zones {
		f.zones = append(f.zones, zoneName(z))
	}
	for i := range p.Fleet.Workers {
		id, z := fleet.WorkerID(i+1), zoneName(i%p.Zones)
		f.zone[id] = z
		if err := pf.AddWith(ctx, id, "--zone", z); err != nil {
			pf.Close()
			return nil, err
		}
	}
	if _, err := f.atRest(ctx, nil); err != nil {
		pf.Close()
		return nil, err
	}
	return f, nil
}

// workersIn lists zone z's workers.
func (f *zoneFleet) workersIn(z string) []string {
	var ids []string
	for id, zz := range f.zone {
		if zz == z {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// atRest waits until every shard is owned by a live member, the members
// are every worker not in gone, and each zone holds its capacity's share
// within one shard; it returns the view.
func (f *zoneFleet) atRest(ctx context.Context, gone []string) (procfleet.View, error) {
	want := f.size.Workers - len(gone)
	v, _, err := fleet.WaitFor(ctx, f, fleet.SettleWithin, "every shard owned, zones in proportion", func(v procfleet.View) bool {
		return len(v.Members) == want && v.OwnedByMembers() == f.size.Shards && f.offShare(v) <= 1
	})
	return v, err
}

// offShare is how far, in shards, the zone furthest from its capacity's
// share is in v (every worker weighs 1).
func (f *zoneFleet) offShare(v procfleet.View) float64 {
	held, workers := map[string]int{}, map[string]int{}
	for _, m := range v.Members {
		workers[f.zone[m]]++
	}
	for _, w := range v.Owners {
		held[f.zone[w]]++
	}
	worst := 0.0
	for z, n := range workers {
		share := float64(f.size.Shards) * float64(n) / float64(len(v.Members))
		worst = max(worst, math.Abs(float64(held[z])-share))
	}
	return worst
}

// handlersRunning waits until every shard of lost has a handler that
// started after t0, and returns the latest start.
func (f *zoneFleet) handlersRunning(ctx context.Context, lost []string, t0 time.Time) (time.Time, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if at, ok := f.Starts().Last(lost, t0); ok {
			return at, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("owned again, but the new handlers of %s did not start within 10 s", f.Starts().NotStarted(lost, t0))
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

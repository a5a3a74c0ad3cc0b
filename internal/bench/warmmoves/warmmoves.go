package warmmoves

import (
	"context"
	"errors"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
)

// Name is the scenario's name on the command line and in its rows.
const Name = "warm-moves"

// The comparisons' systems, as api.Lock is the ownership scenarios':
// SystemNoStandbySide is the same handler without a standby side (every
// start restores), for the planned moves; SystemNoStandbys the same
// fleet with no standbys for failover (K = 0), for the crashes.
const (
	SystemNoStandbySide = "no-standby-side"
	SystemNoStandbys    = "no-standbys"
)

// Params are warm-moves' fleets, restore time and trials.
type Params struct {
	Fleet   fleet.Size
	Restore time.Duration // what a cold start of a shard's handler costs
	// MinTrials is the least number of trials of each part, whatever
	// --trials says.
	MinTrials int
	// CostWindow is the length of each window the cost part counts
	// requests over (one per trial); CostSettle how long the fleet is
	// left first after its standbys changed, so that the windows are the
	// steady state (a load report interval and a renewal).
	CostWindow, CostSettle time.Duration
}

// Sizes are warm-moves' at full size and for a smoke run.
var Sizes = bench.Sizes[Params]{
	Full:  Params{Fleet: fleet.Common, Restore: 5 * time.Second, MinTrials: 6, CostWindow: 20 * time.Second, CostSettle: 11 * time.Second},
	Small: Params{Fleet: fleet.CommonSmall, Restore: time.Second, MinTrials: 1, CostWindow: 2 * time.Second, CostSettle: time.Second},
}

// Scenario is warm-moves.
var Scenario = bench.Declare(Name,
	"12 `shardd worker --restore 5s` processes over 128 shards, with a standby side and without (≥ 6 trials each): a worker joins and is drained, the longest time a moved shard processes nothing; an owner kill -9'd on shard.FastPolicy with one standby per shard and with none, until its shards process again; Consul requests, CPU and handler time with and without standbys",
	Sizes, run)

func run(ctx context.Context, env *bench.Env, p Params) ([]bench.Result, error) {
	var rows []bench.Result
	var errs []error
	for _, part := range []func(context.Context, *bench.Env, Params) ([]bench.Result, error){runPlanned, runFailover, runCost} {
		rs, err := part(ctx, env, p)
		rows = append(rows, rs...)
		if err != nil {
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return rows, errors.Join(errs...)
}

// trials is how many trials each part runs.
func trials(env *bench.Env, p Params) int { return max(env.Trials, p.MinTrials) }

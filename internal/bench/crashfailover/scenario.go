package crashfailover

import (
	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/internal/bench/takeaway"
)

// Name is the scenario's name on the command line and in its rows.
const Name = "crash-failover"

// Sizes are crash-failover's fleets and trials, at full size and for a
// smoke run.
var Sizes = bench.Sizes[takeaway.Params]{
	Full:  takeaway.Params{Fleet: fleet.Common, Scale: fleet.Large, MinTrials: 20, DefaultPolicyCrashes: true},
	Small: takeaway.Params{Fleet: fleet.CommonSmall, Scale: fleet.LargeSmall, Quick: true},
}

// Scenario is crash-failover.
var Scenario = takeaway.Declare(Name,
	"one of 12 worker processes over 128 shards is kill -9'd, for shardlease and the tuned api.Lock baseline on FastPolicy and DefaultPolicy and for api.Lock's defaults (≥ 20 trials): time until all its shards have new handlers running; also the assignor's worker, at 12 × 128 and 100 × 10,000",
	true, Sizes)

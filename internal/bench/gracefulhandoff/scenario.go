package gracefulhandoff

import (
	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/internal/bench/takeaway"
)

// Name is the scenario's name on the command line and in its rows.
const Name = "graceful-handoff"

// Sizes are graceful-handoff's fleets and trials, at full size and for a
// smoke run.
var Sizes = bench.Sizes[takeaway.Params]{
	Full:  takeaway.Params{Fleet: fleet.Common, Scale: fleet.Large, MinTrials: 20},
	Small: takeaway.Params{Fleet: fleet.CommonSmall, Scale: fleet.LargeSmall, Quick: true},
}

// Scenario is graceful-handoff.
var Scenario = takeaway.Declare(Name,
	"one of 12 worker processes over 128 shards gets SIGTERM, the same systems and policies (≥ 20 trials; shardlease also one of 100 over 10,000): time until all its shards have new handlers running",
	false, Sizes)

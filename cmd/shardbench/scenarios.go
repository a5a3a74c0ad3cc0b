package main

import (
	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/assignorstep"
	"github.com/shardlease/shardlease/internal/bench/coldstart"
	"github.com/shardlease/shardlease/internal/bench/committhroughput"
	"github.com/shardlease/shardlease/internal/bench/coordinatorload"
	"github.com/shardlease/shardlease/internal/bench/crashfailover"
	"github.com/shardlease/shardlease/internal/bench/engines"
	"github.com/shardlease/shardlease/internal/bench/gracefulhandoff"
	"github.com/shardlease/shardlease/internal/bench/lockops"
	"github.com/shardlease/shardlease/internal/bench/reshard"
	"github.com/shardlease/shardlease/internal/bench/rollingrestart"
	"github.com/shardlease/shardlease/internal/bench/scaleout"
	"github.com/shardlease/shardlease/internal/bench/skewedload"
	"github.com/shardlease/shardlease/internal/bench/streame2e"
	"github.com/shardlease/shardlease/internal/bench/stuckworker"
	"github.com/shardlease/shardlease/internal/bench/warmmoves"
	"github.com/shardlease/shardlease/internal/bench/zones"
)

// scenarios lists every scenario, in the order `--scenario all` runs and
// prints them: the ownership rows first, then load and scale, then the
// in-process ones.
var scenarios = bench.Suite{
	crashfailover.Scenario,
	gracefulhandoff.Scenario,
	scaleout.Scenario,
	rollingrestart.Scenario,
	zones.OutageScenario,
	zones.DrainScenario,
	warmmoves.Scenario,
	reshard.Scenario,
	coordinatorload.Scenario,
	coldstart.Scenario,
	lockops.Scenario,
	committhroughput.Scenario,
	assignorstep.Scenario,
	stuckworker.Scenario,
	streame2e.Scenario,
	skewedload.Scenario,
	engines.Scenario,
}

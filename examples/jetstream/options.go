package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/examples/internal/engine"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
)

// options set the servers, the fleet, the stream and the faults.
type options struct {
	natsURL, postgresDSN string
	engine               *engine.Choice // nil: the embedded coordinator
	// partitions before the switch (the fleet's shards at the start) and
	// after it (the shards it reshards to; 0: twice partitions).
	partitions, reshardTo int
	workers               int
	// events is how many rounds the producer publishes at least, one
	// event to every partition of the current layout per pace.
	events int64
	pace   time.Duration
	// keysPer is how many keys (order ids) each partition has at least,
	// before and after the switch.
	keysPer int
	policy  shard.LeasePolicy
	// The faults, as fractions of the rounds: the two kills, the switch
	// (the reshard and the kill during it), the pause, the join. Each
	// comes at its round or, when the one before overran, right after it;
	// the producer publishes (1 − switchAt) of the rounds after the
	// switch, whenever it comes, so the reshard and what follows fall
	// under load.
	killAt   [2]float64
	switchAt float64
	pauseAt  float64
	joinAt   float64
	settle   time.Duration // the most the consumers may take to catch up after the last event
	allLines bool          // print every partition's line (else the problems and the total)
	// The handlers' state: windows of window events per partition, whose
	// open window a cold start rebuilds at replayCost an event; standbys
	// for failover per shard in the fleet's policy.
	window     int64
	replayCost time.Duration
	standbys   int
}

func defaultOptions() options {
	return options{
		partitions: 64, workers: 12, events: 250, pace: 100 * time.Millisecond, keysPer: 2,
		policy: shard.LeasePolicy{TTL: 2 * time.Second, RenewEvery: 400 * time.Millisecond, PauseBudget: time.Second,
			LockDelay: time.Second},
		killAt: [2]float64{0.1, 0.25}, switchAt: 0.4, pauseAt: 0.6, joinAt: 0.8, settle: time.Minute, allLines: true,
		window: 25, replayCost: 80 * time.Millisecond, standbys: 1,
	}
}

func (o *options) useShared(c *engine.Choice) {
	o.engine = c
	o.policy = shard.LeasePolicy{TTL: 3 * time.Second, RenewEvery: 500 * time.Millisecond, PauseBudget: time.Second, LockDelay: 2 * time.Second}
}

func (o options) validate() error {
	var problems []error
	if o.partitions < 1 {
		problems = append(problems, fmt.Errorf("--partitions %d: want at least 1", o.partitions))
	}
	if to := o.to(); o.reshardTo < 0 || to == o.partitions || o.partitions+to > 1000 {
		given := fmt.Sprint(o.reshardTo)
		if o.reshardTo == 0 {
			given = fmt.Sprintf("0 (twice --partitions: %d)", to)
		}
		problems = append(problems, fmt.Errorf("--reshard-to %s: want a count other than --partitions (%d), the two at most 1000 in all (subjects orders.000 to orders.999)",
			given, o.partitions))
	}
	if o.workers < 5 {
		problems = append(problems, fmt.Errorf("--workers %d: want at least 5, since three die and one pauses while another takes its shards", o.workers))
	}
	if o.events < 20 {
		problems = append(problems, fmt.Errorf("--events %d: want at least 20 rounds, so the faults fall while events flow", o.events))
	}
	if o.pace <= 0 {
		problems = append(problems, fmt.Errorf("--pace %v: want a positive duration", o.pace))
	}
	if o.keysPer < 1 || o.keysPer > 100 {
		problems = append(problems, fmt.Errorf("--keys %d: want 1 to 100 keys per partition", o.keysPer))
	}
	if o.window < 1 || o.window > o.events {
		problems = append(problems, fmt.Errorf("--window %d: want 1 to --events (%d) events per window", o.window, o.events))
	}
	if o.replayCost < 0 || o.replayCost > time.Second {
		problems = append(problems, fmt.Errorf("--replay-cost %v: want 0 to 1s per event", o.replayCost))
	}
	if o.standbys < 0 || o.standbys > shard.MaxStandbys {
		problems = append(problems, fmt.Errorf("--standbys %d: want 0 to %d per shard", o.standbys, shard.MaxStandbys))
	}
	return errors.Join(problems...)
}

// to is the partition count after the switch.
func (o options) to() int {
	if o.reshardTo == 0 {
		return 2 * o.partitions
	}
	return o.reshardTo
}

// at is round f of the rounds, at least the first.
func (o options) at(f float64) int64 { return max(1, int64(f*float64(o.events))) }

// pauseFor is how long the paused worker stays stopped: past its lease
// and the lock-delay, so its shards move while it is away.
func (o options) pauseFor() time.Duration { return 2*o.policy.TTL + o.policy.EffectiveLockDelay() }

// maxHold is postgres.Config.MaxHold: the step-down deadline, as the
// offsets/postgres docs say, but not below the store's minimum.
func (o options) maxHold() time.Duration {
	return max(o.policy.StepDownAfter(), postgres.MinMaxHold)
}

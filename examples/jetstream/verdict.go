package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/examples/jetstream/pipeline"
)

// result is what the run ends with.
type result struct {
	proof          pipeline.Proof
	published      int64 // messages the producer published (events and markers)
	kills, pauses  int   // kills: the two, and the one during the reshard
	joins          int
	stale, ended   int64
	batches        int64
	failedTx       int64
	ownedByTheDead int
	windows        pipeline.WindowProof
	// Cold and warm handler starts: state rebuilt from the stream, or
	// taken from a standby; standbys asked for per shard.
	cold, warm int64
	standbys   int
	reshard    reshardResult
	keys       pipeline.KeyProof
	// closed counts the parents' closes the handlers committed;
	// childStarts the children's handler starts, shortParents those that
	// found a parent's final checkpoint short of its marker.
	closed, childStarts, shortParents int64
}

// reshardResult is the story's reshard as it went.
type reshardResult struct {
	from, to int
	// switched is the rounds published before the markers.
	switched int64
	done     bool
	took     time.Duration
	// killedOpen is how many parents still open the worker killed during
	// the reshard held when it died.
	killedOpen int
}

// check is the run's verdict.
func (r result) check() error {
	var problems []error
	if r.proof.Duplicates != 0 {
		problems = append(problems, fmt.Errorf("%d events applied more than once", r.proof.Duplicates))
	}
	if r.proof.Gaps != 0 {
		problems = append(problems, fmt.Errorf("%d events never applied", r.proof.Gaps))
	}
	if r.proof.Foreign != 0 {
		problems = append(problems, fmt.Errorf("%d effects of events the stream does not have", r.proof.Foreign))
	}
	if r.proof.Behind != 0 {
		problems = append(problems, fmt.Errorf("%d partitions whose committed offset is not their last event's sequence", r.proof.Behind))
	}
	if r.kills < 3 || r.pauses < 1 || r.joins < 1 {
		problems = append(problems, fmt.Errorf("the faults did not all happen: %d kills, %d pauses, %d joins", r.kills, r.pauses, r.joins))
	}
	if r.stale < 1 {
		problems = append(problems, errors.New("no transaction of a superseded owner was refused by the fence: the fence was never tested"))
	}
	if r.ownedByTheDead != 0 {
		problems = append(problems, fmt.Errorf("%d shards still owned by dead workers at the end", r.ownedByTheDead))
	}
	if !r.windows.OK() {
		problems = append(problems, fmt.Errorf("windows: %d written twice, %d missing, %d not equal to a recomputation from the stream",
			r.windows.Duplicates, r.windows.Missing, r.windows.Wrong))
	}
	if r.standbys > 0 && r.warm == 0 {
		problems = append(problems, fmt.Errorf("%d standbys per shard, but no handler started warm: the standbys were never used", r.standbys))
	}
	problems = append(problems, r.checkReshard()...)
	return errors.Join(problems...)
}

// checkReshard is the verdict on the reshard and on each key's order
// across it.
func (r result) checkReshard() []error {
	var problems []error
	rs := r.reshard
	if !rs.done {
		problems = append(problems, fmt.Errorf("the reshard from %d to %d partitions did not finish", rs.from, rs.to))
	}
	if rs.killedOpen < 1 {
		problems = append(problems, errors.New("no worker was killed holding a parent still open during the reshard: closing by a parent's next owner was never tested"))
	}
	if r.proof.Markers != int64(rs.from) {
		problems = append(problems, fmt.Errorf("%d of the %d partitions before the switch end with a marker", r.proof.Markers, rs.from))
	}
	if r.closed < int64(rs.from) {
		problems = append(problems, fmt.Errorf("%d closes committed for %d parents", r.closed, rs.from))
	}
	if r.childStarts < int64(rs.to) || r.shortParents != 0 {
		problems = append(problems, fmt.Errorf("%d handler starts of the %d children, %d of them given a parent's final checkpoint short of its marker",
			r.childStarts, rs.to, r.shortParents))
	}
	k := r.keys
	if k.Duplicates != 0 || k.Gaps != 0 || k.Foreign != 0 {
		problems = append(problems, fmt.Errorf("keyed events: %d applied more than once, %d never, %d not in the stream", k.Duplicates, k.Gaps, k.Foreign))
	}
	if k.OutOfOrder != 0 {
		problems = append(problems, fmt.Errorf("%d of %d pairs of a key's events applied out of the key's order (%d of them across the switch)",
			k.OutOfOrder, k.Pairs, k.CrossedOutOfOrder))
	}
	if k.CrossedKeys < 1 {
		problems = append(problems, fmt.Errorf("none of the %d keys has events on both sides of the switch: the order across it was never tested", k.Keys))
	}
	return problems
}

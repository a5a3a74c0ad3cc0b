package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/examples/jetstream/pipeline"
	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/internal/inproc"
	"github.com/shardlease/shardlease/shard"
)

// reshard is the story's reshard, under load. The worker holding the most
// shards stalls (a slow consumer: its handlers stop where they are, its
// session stays alive), so its partitions fall short of their markers;
// the producer switches layouts, publishing a marker at the end of every
// old partition; the story starts the reshard as an operator would
// (admin.Operator.Reshard, what `shardctl reshard` runs). The stalled
// worker is killed holding parents it was told to close, once every
// parent the fleet is closing is its (the others have closed): their next
// owners, told to close them too, read on from the last commit to the
// markers. The reshard is done when every child is open and owned.
func (s *story) reshard(ctx context.Context, coords *coordinators, dead map[string]bool, switchNow chan<- struct{}, switched <-chan int64) (reshardResult, error) {
	rs := reshardResult{from: s.from.Count, to: s.to.Count}
	snap, err := coords.observer.Fleet().Watch(ctx, 0)
	if err != nil {
		return rs, err
	}
	counts := snap.Counts()
	running := s.fleet.Running()
	victim := slices.MaxFunc(running, func(a, b *inproc.Member[*proc]) int { return counts[a.ID] - counts[b.ID] })
	victim.Hold("stall", inproc.Hold{Mode: faults.Healthy, Freeze: true})

	close(switchNow)
	select {
	case rs.switched = <-switched:
	case <-time.After(30 * time.Second):
		return rs, fmt.Errorf("the producer did not switch within 30 s of being told")
	case <-ctx.Done():
		return rs, context.Cause(ctx)
	}
	s.say("*** round %d: %s's handlers stall (a slow consumer: its %d partitions fall short of their markers); the producer switches from %d to %d partition subjects: a marker ends each of %s … %s, and events go to %s … %s",
		rs.switched, victim.ID, counts[victim.ID], s.from.Count, s.to.Count,
		pipeline.Subject(s.from.First), pipeline.Subject(s.from.Last()), pipeline.Subject(s.to.First), pipeline.Subject(s.to.Last()))

	op := admin.Operator{Coordinator: coords.observer, Name: fleetName, By: "examples/jetstream"}
	if _, err := op.Reshard(ctx, admin.ReshardPlan{Shards: s.to.Count, Name: s.children.Name, Lineage: shard.LineageMod,
		Reason: fmt.Sprintf("the producer switched to %d partitions", s.to.Count)}); err != nil {
		return rs, err
	}
	began := time.Now()
	s.say("*** round %d: reshard started: the %d parents (%s …) close at their markers; each of the %d children (%s …) opens once its parents have (child c's: the p ≡ c mod %d)",
		s.rounds.Load(), s.parents.Shards, s.parents.ID(0), s.children.Shards, s.children.ID(0), gcd(s.from.Count, s.to.Count))

	// Until every parent the fleet is closing now (the assignor may close
	// them a wave at a time) is the stalled worker's, and it has some.
	var progress shard.ReshardProgress
	asked := 0
	err = s.follow(ctx, coords.observer, func(snap shard.Snapshot) bool {
		rp, ok := snap.Reshard()
		if !ok {
			return true
		}
		progress = rp
		closing := map[shard.ID]bool{}
		for _, a := range snap.Assignments {
			for _, id := range a.Close {
				closing[id] = true
			}
		}
		owners := snap.Owners()
		rs.killedOpen, asked = 0, 0
		others := 0
		for _, id := range rp.Open {
			switch {
			case owners[id] == victim.ID:
				rs.killedOpen++
				if closing[id] {
					asked++
				}
			case closing[id]:
				others++
			}
		}
		return asked > 0 && others == 0
	})
	if err != nil {
		return rs, err
	}
	victim.Crash()
	dead[victim.ID] = true
	s.say("*** round %d: %s is killed during the reshard, holding %d parents still open, %d of them told to close (%d closed, %d children open); their next owners, told to close them too, read on from the last commit to the markers",
		s.rounds.Load(), victim.ID, rs.killedOpen, asked, len(progress.Closed), len(progress.Opened))

	if err := s.waitSettled(ctx, coords.observer, dead); err != nil {
		return rs, err
	}
	rs.done, rs.took = true, time.Since(began)
	s.say("    round %d: reshard done %v after it started: the %d parents closed, the %d children owned",
		s.rounds.Load(), rs.took.Round(10*time.Millisecond), s.parents.Shards, s.children.Shards)
	return rs, nil
}

// fleetName names the fleet in the operator's messages.
const fleetName = "examples/jetstream"

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

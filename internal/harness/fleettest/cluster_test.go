package fleettest

import (
	"fmt"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/consultest"
)

// TestLeaderKill: on a three-server cluster, 6 worker processes own 64
// shards through the two followers (three each, as workers would talk to
// their local agents); then the Raft leader is killed. A separate client
// checks every snapshot it can read throughout: no shard is ever held by a
// dead session or by the wrong worker, no worker has two live sessions, and
// tokens never go back. Afterwards every shard is owned again by live
// workers within one of each other, and no two processes' handler intervals
// overlap.
//
// The lease (10 s check TTL, 7 s to step down) is meant to ride out an
// election and the seconds after it in which servers still refuse reads
// ("Raft leader not found in server lookup mapping"); should that take
// longer, workers step down and rejoin, and the same checks must hold.
func TestLeaderKill(t *testing.T) {
	cl := consultest.StartCluster(t, 3)
	leader := cl.Leader(t)
	var followers []*consultest.Agent
	for _, a := range cl.Agents {
		if a != leader {
			followers = append(followers, a)
		}
	}
	prefix := "fleettest/" + randomName()
	// The monitor reads through every server in turn, skipping one that
	// cannot answer (the killed leader; a server still catching up with
	// the new one).
	mon := newMonitor(t, prefix, fleetShards, followers[0].Client(t), followers[1].Client(t), leader.Client(t))
	mon.patience = 30 * time.Second
	var procs []*proc
	t.Cleanup(func() {
		mon.close()
		checkIntervals(t, procs, nil)
	})
	for i := range fleetWorkers {
		id := fmt.Sprintf("w%d", i+1)
		args := workerArgs(followers[i%2].HTTPAddr, prefix, id, fleetShards,
			"--ttl", "10s", "--renew", "1s", "--pause-budget", "3s", "--lock-delay", "7s", "--commit-every", "500ms")
		procs = append(procs, startWorker(t, id, args))
	}
	converge(t, mon, fleetWorkers, 40*time.Second)
	before := mon.snapshot()

	killed := time.Now()
	cl.KillChosenLeader(t, leader)
	newLeader := cl.Leader(t)
	t.Logf("killed leader %s; %s leads %v later", leader.Name, newLeader.Name, time.Since(killed).Round(time.Millisecond))

	// Ride past the election and a step-down deadline, then require a
	// settled fleet.
	time.Sleep(time.Until(killed.Add(8 * time.Second)))
	converge(t, mon, fleetWorkers, 30*time.Second)
	after := mon.snapshot()
	moved, stepDowns := 0, 0
	for id, st := range before.shards {
		if after.shards[id].session != st.session {
			moved++
		}
	}
	for _, p := range procs {
		stepDowns += len(p.find("stepped down"))
		if !p.running() {
			t.Errorf("%s exited during the leader change", p.id)
		}
	}
	t.Logf("after the leader change: %d of %d shards changed hands, %d worker step-downs", moved, fleetShards, stepDowns)
	for id, st := range after.shards {
		if st.token < before.shards[id].token {
			t.Errorf("%s: token %d after the leader change, below %d before", id, st.token, before.shards[id].token)
		}
	}
}

package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/harness/consultest"
)

// RunLeaderKills kills the Raft leader of cl n times (SIGKILL), each time
// waiting for the others to elect a new one, restarting the killed server
// and waiting until every server is a healthy voter again, then settle. It
// calls t.Fatal when the cluster does not recover, so it must run on the
// test's goroutine.
//
// Autopilot is told first not to remove dead servers: by default it removes
// the killed one from the Raft configuration and, once restarted, keeps it
// a non-voter for its stabilization time (10 s), so a second leader kill
// within that time leaves one voter of three and no leader at all.
func RunLeaderKills(ctx context.Context, t testing.TB, cl *consultest.Cluster, n int, settle time.Duration) []Fault {
	t.Helper()
	var ops []*api.Operator
	for _, a := range cl.Agents {
		ops = append(ops, a.Client(t).Operator())
	}
	op := cl.Leader(t).Client(t).Operator()
	if err := op.AutopilotSetConfiguration(&api.AutopilotConfiguration{CleanupDeadServers: false,
		LastContactThreshold: api.NewReadableDuration(200 * time.Millisecond), MaxTrailingLogs: 250,
		ServerStabilizationTime: api.NewReadableDuration(time.Second)}, nil); err != nil {
		t.Fatalf("chaos: configuring autopilot: %v", err)
	}
	var faults []Fault
	for range n {
		if ctx.Err() != nil {
			break
		}
		leader := cl.Leader(t)
		ft := Fault{Kind: LeaderKill, Target: leader.Name, Start: time.Now()}
		leader.Kill(t)
		next := cl.Leader(t)
		ft.Detail = fmt.Sprintf("%s elected in %v", next.Name, time.Since(ft.Start).Round(time.Millisecond))
		leader.Restart(t)
		if err := allVoters(ctx, ops, time.Minute); err != nil {
			t.Fatalf("chaos: after restarting %s: %v", leader.Name, err)
		}
		ft.End = time.Now()
		faults = append(faults, ft)
		sleepCtx(ctx, settle)
	}
	return faults
}

// allVoters waits until every server (one Operator client each) is a
// healthy Raft voter, asking each in turn.
func allVoters(ctx context.Context, ops []*api.Operator, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last error
	for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		op := ops[i%len(ops)]
		q := (&api.QueryOptions{}).WithContext(ctx)
		cfg, err := op.RaftGetConfiguration(q)
		if err == nil {
			voters := 0
			for _, s := range cfg.Servers {
				if s.Voter {
					voters++
				}
			}
			var h *api.OperatorHealthReply
			if h, err = op.AutopilotServerHealth(q); err == nil {
				if voters == len(ops) && h.Healthy {
					return nil
				}
				err = fmt.Errorf("%d voters of %d servers, healthy %v", voters, len(ops), h.Healthy)
			}
		}
		last = err
		sleepCtx(ctx, 200*time.Millisecond)
	}
	return fmt.Errorf("not every server a healthy voter within %v: %v", within, last)
}

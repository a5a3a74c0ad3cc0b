package etcd

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// How Assign paces a write of many transactions (awaitApplied).
const (
	// applySettle is how long Assign waits for the workers whose keys it
	// just wrote to send their acquisitions before it looks at the apply
	// backlog, at most.
	applySettle = 250 * time.Millisecond
	// applyWait bounds the wait for the backlog to drain, so that a member
	// that stays behind slows a write without stopping it.
	applyWait = time.Second
	// maxApplyBacklog is the backlog, in raft entries, under which the next
	// transaction goes: a few acquisitions of up to MaxTxnShards locks.
	maxApplyBacklog = 8
	applyPoll       = 10 * time.Millisecond
	// paceAfterLocks is the least number of free shards a transaction of
	// Assign gives for the next to wait: fewer acquisitions than this
	// are applied in moments, and a join's or a failover's hand-offs are
	// not delayed.
	paceAfterLocks = 1000
)

// awaitApplied waits, before the next transaction of a large Assign,
// until the member the client's connection reaches has applied what it
// committed (waitApplied).
func (c *Coordinator) awaitApplied(ctx context.Context, expect int) {
	// On the client's own connection: clientv3's Status dials the
	// endpoint afresh on every call.
	maintenance := pb.NewMaintenanceClient(c.cli.ActiveConnection())
	waitApplied(ctx, expect, func() (committed, applied uint64, ok bool) {
		sctx, cancel := context.WithTimeout(ctx, applyWait)
		defer cancel()
		st, err := maintenance.Status(sctx, &pb.StatusRequest{})
		if err != nil {
			return 0, 0, false
		}
		return st.RaftIndex, st.RaftAppliedIndex, true
	})
}

// waitApplied waits until status reports the apply caught up with the
// commits (within maxApplyBacklog entries), after first giving the
// workers of the last transaction (about expect of them) up to
// applySettle to send their acquisitions. etcd renews a lease only once
// it has applied every entry committed before the renewal, and waits for
// that one second at most: written at once, a cold start's thousand keys
// set off a hundred thousand lock writes together, the apply fell seconds
// behind, renewals failed and workers stepped down. The wait is bounded
// (applySettle + applyWait) and a failed status read ends it: pacing is
// never a reason for a write to fail.
func waitApplied(ctx context.Context, expect int, status func() (committed, applied uint64, ok bool)) {
	start, _, ok := status()
	if !ok {
		return
	}
	settle := time.Now().Add(applySettle)
	deadline := settle.Add(applyWait)
	for {
		committed, applied, ok := status()
		switch {
		case !ok:
			return
		case time.Now().Before(settle) && committed < start+uint64(expect):
		case committed <= applied+maxApplyBacklog || !time.Now().Before(deadline):
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(applyPoll):
		}
	}
}

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
// until etcd has applied what it committed (waitApplied).
func (c *Coordinator) awaitApplied(ctx context.Context, expect int) {
	// On the client's own connection: clientv3's Status dials the
	// endpoint afresh on every call. Each answer is one member's, whose
	// backlog is its own (its commit and apply indexes); on a cluster
	// successive answers may come from different members, which apply
	// the same log at about the same pace.
	maintenance := pb.NewMaintenanceClient(c.cli.ActiveConnection())
	status := func(ctx context.Context) (committed, applied uint64, err error) {
		st, err := maintenance.Status(ctx, &pb.StatusRequest{})
		if err != nil {
			return 0, 0, err
		}
		return st.RaftIndex, st.RaftAppliedIndex, nil
	}
	read := func(ctx context.Context) error {
		_, err := c.cli.Get(ctx, c.keys.Config())
		return err
	}
	waitApplied(ctx, expect, status, read)
}

// waitApplied waits until status reports the apply caught up with the
// commits (within maxApplyBacklog entries), after first giving the
// workers of the last transaction (about expect of them) up to
// applySettle to send their acquisitions. etcd renews a lease only once
// it has applied every entry committed before the renewal, and waits for
// that one second at most: written at once, a cold start's thousand keys
// set off a hundred thousand lock writes together, the apply fell seconds
// behind, renewals failed and workers stepped down. When status cannot be
// read at all (etcd with auth answers it for root only), the wait is the
// settle time and then read, a linearizable read, which etcd answers once
// it has applied what it had committed when the read arrived. The whole
// wait is bounded by applySettle + applyWait, and a status read that fails
// midway ends it: pacing is never a reason for a write to fail.
func waitApplied(ctx context.Context, expect int, status func(context.Context) (committed, applied uint64, err error), read func(context.Context) error) {
	ctx, cancel := context.WithTimeout(ctx, applySettle+applyWait)
	defer cancel()
	settle := time.Now().Add(applySettle)
	start, _, err := status(ctx)
	if err != nil {
		t := time.NewTimer(time.Until(settle))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_ = read(ctx)
		return
	}
	for {
		committed, applied, err := status(ctx)
		switch {
		case err != nil:
			return
		case time.Now().Before(settle) && committed < start+uint64(expect):
		case committed <= applied+maxApplyBacklog:
			return
		}
		t := time.NewTimer(applyPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

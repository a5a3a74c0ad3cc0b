package etcd

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// progressEvery is how often a watch waiting for the mirror to catch up
// asks etcd for the watch's progress.
const progressEvery = 50 * time.Millisecond

// minGCWait keeps a watch waiting for a member's grace to end from
// turning into a busy loop.
const minGCWait = 100 * time.Millisecond

// Watch returns the fleet's snapshot from the coordinator's mirror (one
// etcd watch of the prefix: deltas, not the prefix again). With after 0
// it first reads etcd's current revision and waits until the mirror has
// applied every change up to it, so the snapshot is as new as the call;
// otherwise it returns once the mirror's index is past after (or below
// it: etcd rebuilt or restored, and shard.NextIndex restarts from 0).
// While waiting longer than WatchWait it checks that etcd still answers
// (a failure wraps shard.ErrUnavailable: the caller backs off and tries
// again). Dead member keys are deleted once their grace has passed, as on
// Consul, with a check on the revision they were seen dead at.
func (f fleet) Watch(ctx context.Context, after uint64) (shard.Snapshot, error) {
	c := f.c
	if err := ctxErr(ctx); err != nil {
		return shard.Snapshot{}, err
	}
	m := c.startMirror()
	if after == 0 {
		if err := c.catchUp(ctx, m); err != nil {
			return shard.Snapshot{}, err
		}
		return c.snapshot(ctx, m), nil
	}
	for {
		rev, _, err, changed := m.state()
		switch {
		case rev == 0 && err != nil:
			return shard.Snapshot{}, err
		case rev != 0 && uint64(rev) != after:
			return c.snapshot(ctx, m), nil
		}
		wait := c.cfg.WatchWait
		due, collecting := c.graveyard.Next()
		if collecting {
			wait = min(wait, max(time.Until(due), minGCWait))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return shard.Snapshot{}, context.Cause(ctx)
		case <-changed:
			t.Stop()
			continue
		case <-t.C:
		}
		if collecting && !now().Before(due) {
			c.snapshot(ctx, m) // collects; the view has not changed
			continue
		}
		if err := c.ping(ctx, m); err != nil {
			return shard.Snapshot{}, err
		}
	}
}

// catchUp waits until the mirror has applied every change up to etcd's
// current revision, asking etcd for the watch's progress meanwhile, for
// at most RequestTimeout.
func (c *Coordinator) catchUp(ctx context.Context, m *mirror) error {
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	resp, err := c.cli.Get(octx, c.keys.Config(), clientv3.WithCountOnly())
	if err != nil {
		return c.fail(octx, "watch (read the revision)", err)
	}
	target := resp.Header.Revision
	m.went(target)
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		rev, progress, err, changed := m.state()
		if rev != 0 && progress >= target {
			return nil
		}
		select {
		case <-octx.Done():
			if err == nil {
				err = fmt.Errorf("the watch of the prefix has not reached revision %d", target)
			}
			return c.fail(octx, "watch (catch up)", err)
		case <-changed:
		case <-tick.C:
			m.requestProgress(octx)
		}
	}
}

// ping checks that etcd answers, and has not gone back below what the
// mirror applied.
func (c *Coordinator) ping(ctx context.Context, m *mirror) error {
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	resp, err := c.cli.Get(octx, c.keys.Config(), clientv3.WithCountOnly())
	if err != nil {
		return c.fail(octx, "watch (check etcd)", err)
	}
	m.went(resp.Header.Revision)
	return nil
}

// snapshot decodes the mirror and collects the dead member keys and
// orphaned report keys it shows.
func (c *Coordinator) snapshot(ctx context.Context, m *mirror) shard.Snapshot {
	pairs, index, unreadable := m.pairs()
	snap := c.keys.Decode(pairs, index)
	for _, key := range unreadable {
		snap.Problems = append(snap.Problems, fmt.Sprintf("%s: not a key shardlease wrote (want JSON {\"session\", \"lock_delay_ms\", \"value\"}): a lock in this state is held by nobody known and taken by no session until it is deleted (etcdctl del %s); a member or report key counts as dead", key, key))
	}
	c.collect(ctx, pairs)
	return snap
}

// collect deletes the report keys held by no live session whose worker
// has no member key, and the dead member keys whose grace has passed
// (fleetkeys.DeadMembers) with their worker's report keys, each in a
// transaction comparing the revision it was seen at: a worker that
// joined again in between moved it, and nothing is deleted. Failures are
// left for the next watch.
func (c *Coordinator) collect(ctx context.Context, pairs []*fleetkeys.Pair) {
	del := func(key string, index uint64, also ...string) bool {
		octx, cancel := c.opCtx(ctx)
		defer cancel()
		ops := []clientv3.Op{clientv3.OpDelete(key)}
		for _, k := range also {
			ops = append(ops, clientv3.OpDelete(k))
		}
		_, err := c.cli.Txn(octx).If(clientv3.Compare(clientv3.ModRevision(key), "=", int64(index))).Then(ops...).Commit()
		return err == nil
	}
	for _, kv := range fleetkeys.OrphanReports(c.keys.Layout, pairs) {
		del(kv.Key, kv.Index)
	}
	t := now()
	for _, kv := range c.graveyard.Due(c.keys.Layout, pairs, t) {
		worker, _ := c.keys.MemberOf(kv.Key)
		c.graveyard.Tried(kv.Key, del(kv.Key, kv.Index, c.keys.Reports(worker)...), t)
	}
}

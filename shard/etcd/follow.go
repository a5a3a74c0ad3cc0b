package etcd

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/internal/fleetkeys"
)

// follow is one watch of a few keys with the blocking-query rules of
// shard.NextIndex. read reads the state (and keeps it in the caller's
// closure) and returns the keys whose change changes it, the state's
// index (see keyIndex) and the revision it read at. With after 0, or a
// revision below after (an etcd rebuilt or restored: shard.NextIndex
// restarts from 0), follow returns at once. Otherwise it waits, with an
// etcd watch of those keys from after+1, for a change past after, then
// reads again and returns the new index; a change compacted away counts
// as one. When WatchWait passes with no change it returns after itself
// (nothing changed), the state read.
func (c *Coordinator) follow(ctx context.Context, op string, after uint64, read func(context.Context) (keys []string, index uint64, rev int64, err error)) (uint64, error) {
	for {
		if err := ctxErr(ctx); err != nil {
			return 0, err
		}
		octx, cancel := c.opCtx(ctx)
		keys, index, rev, err := read(octx)
		cancel()
		if err != nil {
			return 0, err
		}
		if after == 0 || uint64(rev) < after {
			return index, nil
		}
		changed, err := c.waitChange(ctx, op, keys, int64(after)+1)
		if err != nil {
			return 0, err
		}
		if !changed {
			return after, nil
		}
		after = 0 // read again, and return what it reads
	}
}

// waitChange waits for an event on any of keys at revision from or later,
// up to WatchWait (then false), or until ctx ends. A watch that etcd
// cancels (the revision compacted) counts as a change: the caller reads
// again.
func (c *Coordinator) waitChange(ctx context.Context, op string, keys []string, from int64) (bool, error) {
	wctx, cancel := context.WithTimeout(ctx, c.cfg.WatchWait)
	defer cancel()
	woke := make(chan error, len(keys))
	for _, k := range keys {
		ch := c.cli.Watch(wctx, k, clientv3.WithRev(from))
		go func() {
			for resp := range ch {
				switch {
				case resp.CompactRevision != 0 || len(resp.Events) > 0:
					woke <- nil
					return
				case resp.Err() != nil:
					woke <- resp.Err()
					return
				}
			}
		}()
	}
	select {
	case err := <-woke:
		if err != nil {
			return false, c.fail(wctx, op, fmt.Errorf("watch: %w", err))
		}
		return true, nil
	case <-wctx.Done():
		if err := ctxErr(ctx); err != nil {
			return false, err
		}
		return false, nil
	}
}

// keyIndex is the index of a watched key p read at revision rev, as
// Consul's blocking index of one key: the revision of its last change.
// That is the key's own while its holder lives (or its holder's key's
// creation, if later), and the read's when the key is missing or its
// holder has ended (the end is not a write of the key, and its revision
// is not known from a read; it is at or before the read).
func keyIndex(p *fleetkeys.Pair, holderKey *mvccpb.KeyValue, ended bool, rev int64) uint64 {
	switch {
	case p == nil || ended:
		return uint64(rev)
	case holderKey != nil:
		return max(p.Index, uint64(holderKey.ModRevision))
	}
	return p.Index
}

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
// restarts from 0), follow returns at once, as it does when the read
// shows a key's revision past after. Otherwise it waits, with an etcd
// watch of those keys, for a change past after, then reads again and
// returns the new index. The watch starts after the read's revision when
// the state's index is after itself (nothing changed up to the read), and
// after after when the index is the read's own revision (a missing key,
// or a holder that ended: a read cannot tell when that happened). When
// etcd has compacted the history the watch needs, it reads again: a state
// whose index moved is returned, one whose did not is waited on from that
// read's revision (so an idle key's watch does not spin once its index is
// compacted away). When WatchWait passes with no change it returns after
// itself (nothing changed), the state read.
func (c *Coordinator) follow(ctx context.Context, op string, after uint64, read func(context.Context) (keys []string, index uint64, rev int64, err error)) (uint64, error) {
	from := int64(after) + 1
	var woke, compacted bool
	for {
		if err := ctxErr(ctx); err != nil {
			return 0, err
		}
		octx, cancel := c.opCtx(ctx)
		keys, index, rev, err := read(octx)
		cancel()
		switch {
		case err != nil:
			return 0, err
		case after == 0 || uint64(rev) < after || woke || compacted && index != after:
			return index, nil
		case compacted:
			from, compacted = rev+1, false
		case index == after:
			// Nothing the state depends on changed up to rev: wait from
			// rev+1. A watch from a revision etcd has passed is caught
			// up by its sync loop, every 100 ms, before it sees new
			// events; one from the next revision is live at once.
			from = max(from, rev+1)
		case index != uint64(rev):
			return index, nil // a key changed since after, and its revision says so
		}
		got, err := c.waitChange(ctx, op, keys, from)
		switch {
		case err != nil:
			return 0, err
		case got == waitedOut:
			return after, nil
		case got == changed:
			woke = true
		default:
			compacted = true
		}
	}
}

// A watch's outcome.
type waited int

const (
	waitedOut   waited = iota // WatchWait passed, nothing changed
	changed                   // an event on a watched key
	historyGone               // etcd compacted the revisions asked for
)

// waitChange waits for an event on any of keys at revision from or later,
// up to WatchWait, or until ctx ends. The watches require a leader: a
// member cut off from the others ends them instead of staying silent.
func (c *Coordinator) waitChange(ctx context.Context, op string, keys []string, from int64) (waited, error) {
	wctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), c.cfg.WatchWait)
	defer cancel()
	type outcome struct {
		got waited
		err error
	}
	woke := make(chan outcome, len(keys))
	for _, k := range keys {
		ch := c.cli.Watch(wctx, k, clientv3.WithRev(from))
		go func() {
			for resp := range ch {
				switch {
				case resp.CompactRevision != 0:
					woke <- outcome{got: historyGone}
					return
				case len(resp.Events) > 0:
					woke <- outcome{got: changed}
					return
				case resp.Err() != nil:
					woke <- outcome{err: resp.Err()}
					return
				}
			}
		}()
	}
	select {
	case o := <-woke:
		if o.err != nil {
			return 0, c.fail(ctx, op, fmt.Errorf("watch: %w", o.err))
		}
		return o.got, nil
	case <-wctx.Done():
		if err := ctxErr(ctx); err != nil {
			return 0, err
		}
		return waitedOut, nil
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

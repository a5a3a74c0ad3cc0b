package consul

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// minGCWait keeps a watch waiting for a member's grace to end from turning
// into a busy loop of tiny blocking queries.
const minGCWait = 100 * time.Millisecond

// Watch is one blocking query on the fleet's prefix (the names one level
// below "P/", with WaitIndex after) and, once it moves, a read of the
// fleet's keys in two parts (listFleet: the locks of P/shards only when
// they changed), decoded into a snapshot. Index is Consul's
// X-Consul-Index for the prefix.
//
// Blocking-query rules: after 0 returns at once; a query that times out
// with the index unchanged is asked again, so Watch never returns an
// unchanged index; an index lower than after (Consul state reset, or a
// tombstone reap) is returned as is, and shard.NextIndex turns it into a
// restart from 0. Unlike the embedded coordinator, an after ahead of
// Consul's index blocks until something changes or WatchWait passes.
//
// Keys under the prefix that are not the fleet's (foreign keys, malformed
// values, shards outside the config) are listed in Snapshot.Problems and
// never become members, owners or assignments (a foreign tree beside the
// fleet's, P/x/…, is named once as "P/x/", its keys unread); a shard key or P/assignor
// with a malformed value is still shown with its lock holder and token
// (epoch), because the lock is real.
// Snapshot.Config is the config Configure settled, once it has; a P/config
// that differs from it, cannot be read or is missing is a problem naming
// both, never adopted. Before Configure (an operator's view) it is the
// stored config (see fleetconfig.go).
// P/offsets/ belongs to the offsets store and P/history to History: Watch
// reads neither.
//
// Dead member keys (no session) are shown with an empty Session, and
// deleted by Watch itself once it has seen them dead for the member grace,
// with a check-and-set on their ModifyIndex so that a worker that joined
// again in between is never deleted. While such a deletion is pending, the
// blocking query waits no longer than until it is due.
//
// A failure wraps shard.ErrUnavailable (or ErrPermissionDenied); the caller
// backs off and retries.
func (f fleet) Watch(ctx context.Context, after uint64) (shard.Snapshot, error) {
	c := f.c
	for {
		if err := ctxErr(ctx); err != nil {
			return shard.Snapshot{}, err
		}
		wait := c.cfg.WatchWait
		if due, ok := c.graveyard.Next(); ok {
			wait = min(wait, max(time.Until(due), minGCWait))
		}
		l, err := c.listFleet(ctx, after, wait)
		if err != nil {
			return shard.Snapshot{}, err
		}
		if after != 0 && l.index == after {
			// The blocking query timed out: nothing changed, but a dead
			// member's grace may have ended (the wait was bounded by it).
			if due, ok := c.graveyard.Next(); ok && !now().Before(due) {
				rest, err := c.readControl(ctx)
				if err != nil {
					return shard.Snapshot{}, err
				}
				c.collectDead(ctx, pairsOf(rest))
			}
			continue
		}
		pairs := l.pairs
		kvs := pairsOf(pairs) // once per listing: a large fleet's is large
		snap := c.keys.Decode(kvs, l.index)
		for _, name := range l.foreign {
			snap.Problems = append(snap.Problems, fmt.Sprintf("%s: foreign key under the fleet prefix; ignored", name))
		}
		if l.filtered {
			// Consul hides keys the token may not read instead of refusing
			// the list.
			snap.Problems = append(snap.Problems, fmt.Sprintf("%s: some keys were hidden by ACLs: the token needs key_prefix %q read (and write to take part)",
				c.prefix, c.prefix))
		}
		if c.keys.ConfigPair(kvs) == nil {
			// A list hiding everything looks like an empty fleet (1.14 sets
			// no filtered header on its 404). A fleet is configured before
			// anything else, so a missing config is rare and worth one read
			// of the key, which Consul does refuse with 403.
			if err := c.probeConfig(ctx); err != nil {
				return shard.Snapshot{}, err
			}
		}
		c.collectDead(ctx, kvs)
		return snap, nil
	}
}

// blockingQuery runs query once as a blocking query (WaitIndex after,
// WaitTime wait) and turns its error into one of the package's. Consul
// answers a blocking query within wait plus up to wait/16 of jitter; past
// that (and RequestTimeout for the round trip) the agent or the path to it
// is stuck, which TCP alone may take many minutes to notice, so the query
// is bounded there.
func (c *Coordinator) blockingQuery(ctx context.Context, op string, after uint64, wait time.Duration, query func(context.Context, consulkv.Query) error) error {
	bound := wait + wait/16 + c.cfg.RequestTimeout
	qctx, cancel := consulkv.WithRequestTimeout(ctx, bound)
	defer cancel()
	err := query(qctx, consulkv.Query{WaitIndex: after, WaitTime: wait})
	if _, ok := consulkv.TimedOut(qctx); err != nil && ok {
		return fmt.Errorf("%w: consul %s at %s: no answer within %v (a blocking query of %v, its jitter, and the request timeout): %w",
			shard.ErrUnavailable, op, c.cfg.Address, bound, wait, err)
	}
	return c.fail(qctx, op, err)
}

// watchKey is one blocking get of key (WaitIndex after, WaitTime
// WatchWait), bounded as blockingQuery bounds it: the key (nil when it is
// missing) and Consul's X-Consul-Index for it.
func (c *Coordinator) watchKey(ctx context.Context, op, key string, after uint64) (*api.KVPair, uint64, error) {
	var (
		kv   *api.KVPair
		meta consulkv.Meta
	)
	err := c.blockingQuery(ctx, op, after, c.cfg.WatchWait, func(ctx context.Context, q consulkv.Query) (err error) {
		kv, meta, err = c.kv.Get(ctx, key, q)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return kv, meta.LastIndex, nil
}

// decode turns the prefix's keys into a snapshot (fleetkeys.Decoder).
func (c *Coordinator) decode(pairs api.KVPairs, index uint64) shard.Snapshot {
	return c.keys.Decode(pairsOf(pairs), index)
}

// pairsOf is pairs as the fleet's keys.
func pairsOf(pairs api.KVPairs) []*fleetkeys.Pair {
	out := make([]*fleetkeys.Pair, len(pairs))
	for i, kv := range pairs {
		out[i] = pairOf(kv)
	}
	return out
}

// pairOf is one key as the fleet's keys see it: nil for nil.
func pairOf(kv *api.KVPair) *fleetkeys.Pair {
	if kv == nil {
		return nil
	}
	return &fleetkeys.Pair{Key: kv.Key, Value: kv.Value, Index: kv.ModifyIndex, Session: shard.SessionID(kv.Session)}
}

// collectDead deletes the dead member keys whose grace has passed
// (fleetkeys.DeadMembers), each with a CAS on the ModifyIndex it was seen
// dead at, in one transaction with its worker's report keys (a worker
// that joined again in between moved the index, and the transaction is
// rolled back whole). Report keys held by no session whose worker has no
// member key (an operator deleted it) are deleted at once, with a CAS
// too. Failures are ignored: the next watch tries again.
func (c *Coordinator) collectDead(ctx context.Context, pairs []*fleetkeys.Pair) {
	for _, kv := range fleetkeys.OrphanReports(c.keys.Layout, pairs) {
		octx, cancel := c.opCtx(ctx)
		_, _ = c.kv.DeleteCAS(octx, &api.KVPair{Key: kv.Key, ModifyIndex: kv.Index})
		cancel()
	}
	t := now()
	for _, kv := range c.graveyard.Due(c.keys.Layout, pairs, t) {
		octx, cancel := c.opCtx(ctx)
		worker, _ := c.keys.MemberOf(kv.Key)
		ops := api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVDeleteCAS, Key: kv.Key, Index: kv.Index}}}
		for _, k := range c.keys.Reports(worker) {
			ops = append(ops, &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: k}})
		}
		_, _, err := c.kv.Txn(octx, ops)
		cancel()
		c.graveyard.Tried(kv.Key, err == nil, t)
	}
}

// probeConfig reads P/config to tell "not configured yet" from "may not
// read": only the error matters.
func (c *Coordinator) probeConfig(ctx context.Context) error {
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	_, _, err := c.kv.Get(octx, c.keys.Config(), consulkv.Query{})
	return c.fail(octx, "watch (read config)", err)
}

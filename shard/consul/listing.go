package consul

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
)

// listing is the fleet's keys as Watch reads them: the locks of P/shards
// and the small rest (config, roles, members, assignments, loads, freeze,
// policy), and the names one level below P/ that neither covers.
type listing struct {
	index    uint64      // the prefix's X-Consul-Index the read answered
	pairs    api.KVPairs // sorted by key
	foreign  []string    // names below P/ that are none of the fleet's
	filtered bool        // Consul hid keys the token may not read
}

// lockListing is the last full read of P/shards and its index.
type lockListing struct {
	index    uint64
	pairs    api.KVPairs
	filtered bool
}

// controlTrees are the prefixes under P/ besides the locks that a
// listing reads, in one transaction: "assign" covers P/assign/… and the
// assignor's role lock P/assignor.
var controlTrees = []string{"assign", "config", "freeze", "loads/", "members/", "policy", "standby/"}

// listFleet waits, with a blocking query on the names one level below
// P/ (a few hundred bytes), until something under the prefix changes
// past after or wait passes, then reads the fleet's keys in two parts:
// the locks, read again only when a probe of P/shards' own index says
// they changed since this coordinator last read them, and the rest,
// read whole in one transaction. A fleet of 10,000 shards lists about
// 4 MB of locks; a change that touched none of them (a member's mark,
// the assignor's own writes, an offset under P/offsets) costs the rest
// alone. With the index unchanged (the query timed out) it reads
// nothing: l.index is after.
//
// The two parts are read one after the other, each at least as new as
// l.index: a snapshot decoded from them can only be newer than the index
// it carries, never older, which is what every use of the index needs
// (the next blocking query, and an assignment's AsOf: a lock seen free
// was free at that index or later).
func (c *Coordinator) listFleet(ctx context.Context, after uint64, wait time.Duration) (listing, error) {
	var (
		top  []string
		meta consulkv.Meta
	)
	err := c.blockingQuery(ctx, "watch", after, wait, func(ctx context.Context, q consulkv.Query) (err error) {
		top, meta, err = c.kv.Keys(ctx, c.prefix, "/", q)
		return err
	})
	if err != nil {
		c.readFailed(ctx)
		return listing{}, err
	}
	l := listing{index: meta.LastIndex, filtered: meta.FilteredByACLs}
	if after != 0 && l.index == after {
		return l, nil
	}
	if l.index < after {
		// Consul's index went back (a rebuilt or restored Consul, or a
		// tombstone reap): an index of the locks equal to the kept one
		// would be a coincidence, not the same locks.
		c.forgetLocks()
	}
	err = c.readParts(ctx, &l, top)
	if err != nil {
		c.readFailed(ctx)
	}
	return l, err
}

// readFailed drops the kept locks after a read that failed for another
// reason than the caller's ctx ending (a wait bounded by the caller's
// deadline ends that way all the time): a failure may be the first sign
// of a rebuilt or restored Consul, whose locks may come back at an index
// equal to the kept one by chance.
func (c *Coordinator) readFailed(ctx context.Context) {
	if ctx.Err() == nil {
		c.forgetLocks()
	}
}

// readParts fills l with the locks and the rest of the fleet's keys, and
// the foreign names among top.
func (c *Coordinator) readParts(ctx context.Context, l *listing, top []string) error {
	locks, err := c.readLocks(ctx)
	if err != nil {
		return err
	}
	rest, err := c.readControl(ctx)
	if err != nil {
		return err
	}
	l.filtered = l.filtered || locks.filtered
	l.pairs = slices.Concat(rest, locks.pairs)
	slices.SortFunc(l.pairs, func(a, b *api.KVPair) int { return strings.Compare(a.Key, b.Key) })
	for _, name := range top {
		if c.readInParts(name) {
			continue
		}
		if !strings.HasSuffix(name, "/") {
			l.foreign = append(l.foreign, name)
			continue
		}
		keys, err := c.foreignTree(ctx, name)
		if err != nil {
			return err
		}
		l.foreign = append(l.foreign, keys...)
	}
	return nil
}

// foreignTree lists the names of the keys in a tree under P/ that is not
// the fleet's, so each is reported as the full listing did; it reads no
// value.
func (c *Coordinator) foreignTree(ctx context.Context, tree string) ([]string, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	keys, _, err := c.kv.Keys(ctx, tree, "", consulkv.Query{})
	if err != nil {
		return nil, c.fail(ctx, "watch (list a foreign tree)", err)
	}
	return keys, nil
}

// readInParts reports whether a name one level below P/ is read by
// readParts, or is one that Watch skips: P/offsets, the offsets store's,
// and P/history, read only by History.Read.
func (c *Coordinator) readInParts(name string) bool {
	rel := strings.TrimPrefix(name, c.prefix)
	if strings.HasPrefix(rel, "shards") || rel == "offsets/" || rel == "history" {
		return true
	}
	return slices.ContainsFunc(controlTrees, func(tree string) bool { return strings.HasPrefix(rel, tree) })
}

// readLocks returns P/shards' keys: the cached read when a probe of the
// prefix's index (Keys, one name) finds it unchanged, else (or with
// nothing cached) a new read.
// The probe and the list both cover "P/shards", with no slash, so that
// their indexes are the same prefix's.
func (c *Coordinator) readLocks(ctx context.Context) (lockListing, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	prefix := c.prefix + "shards"
	c.mu.Lock()
	cached := c.locks
	c.mu.Unlock()
	if cached != nil {
		_, probe, err := c.kv.Keys(ctx, prefix, "/", consulkv.Query{})
		if err != nil {
			return lockListing{}, c.fail(ctx, "watch (probe the locks)", err)
		}
		if cached.index == probe.LastIndex {
			return *cached, nil
		}
	}
	pairs, meta, err := c.kv.List(ctx, prefix, consulkv.Query{})
	if err != nil {
		return lockListing{}, c.fail(ctx, "watch (list the locks)", err)
	}
	read := &lockListing{index: meta.LastIndex, pairs: pairs, filtered: meta.FilteredByACLs}
	c.mu.Lock()
	c.locks = read
	c.mu.Unlock()
	return *read, nil
}

// forgetLocks drops the cached read of the locks.
func (c *Coordinator) forgetLocks() {
	c.mu.Lock()
	c.locks = nil
	c.mu.Unlock()
}

// readControl reads every key under controlTrees in one transaction of
// get-tree reads (one round trip; a tree with no keys reads nothing).
func (c *Coordinator) readControl(ctx context.Context) (api.KVPairs, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	ops := make(api.TxnOps, len(controlTrees))
	for i, tree := range controlTrees {
		ops[i] = &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVGetTree, Key: c.prefix + tree}}
	}
	const op = "watch (read the fleet's keys)"
	results, errs, err := c.txn(ctx, op, ops)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, c.txnFailure(op, errs)
	}
	pairs := make(api.KVPairs, 0, len(results))
	for _, r := range results {
		if r.KV != nil {
			pairs = append(pairs, r.KV)
		}
	}
	return pairs, nil
}

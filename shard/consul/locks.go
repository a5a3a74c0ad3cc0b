package consul

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// Acquire locks, for the session, every wanted lock that is free and not
// in lock-delay, and returns a grant for each lock the session holds
// afterwards, in the order asked for (a lock asked for twice counts once,
// with the first reason).
//
// It reads the wanted keys first (get-tree, MaxTxnOps per read), so that a
// lock the session already holds is returned with its current token and
// not locked again: a re-lock is a write and would move the token. The
// others are locked MaxTxnShards per transaction, each as a lock and a
// get, after a check that P/config is still as read (its generation is in
// every token: shard.MakeToken(generation, the get's ModifyIndex), and
// every lock of one transaction shares it). Consul rolls a transaction back if any lock in it
// fails: the locks it names as held by another session or in lock-delay
// are dropped and the rest sent again, until a transaction commits or
// nothing is left. Locks left out are not an error.
//
// Errors: a lock name shard.Lock.Validate refuses
// (shard.ErrInvalidArgument) or a shard outside the fleet's config
// (shard.ErrUnknownShard: the one Configure settled, else the stored one)
// before anything is written; a missing session (shard.ErrSessionInvalid);
// Consul unavailable (shard.ErrUnavailable). An error after some
// transactions committed returns the grants they made along with it.
//
// Two concurrent Acquire calls of one session for the same lock may both
// take it (the second one moves the token); shardlease never does that.
func (l locks) Acquire(ctx context.Context, id shard.SessionID, want []shard.Acquisition) ([]shard.Grant, error) {
	c := l.c
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	shardLocks := false
	for _, a := range want {
		if err := a.Lock.Validate(); err != nil {
			return nil, err
		}
		_, isShard := a.Lock.Shard()
		shardLocks = shardLocks || isShard
	}
	want = fleetkeys.UniqueBy(want, func(a shard.Acquisition) shard.Lock { return a.Lock })
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	info, err := c.lookup(octx, id)
	if err != nil {
		return nil, err
	}

	keys := make([]string, 0, len(want)+1)
	for _, a := range want {
		keys = append(keys, c.keys.Lock(a.Lock))
	}
	// The config in the same read: its generation goes into every token,
	// and when not configured, it is the stored shard set.
	keys = append(keys, c.keys.Config())
	set := c.keys.Fleet()
	current, err := c.readKeys(octx, "acquire (read)", keys)
	if err != nil {
		return nil, err
	}
	if kv := current[c.keys.Config()]; set == nil && kv != nil {
		if cfg, err := fleetkeys.ParseConfig(kv.Value); err == nil {
			set = c.keys.Stored(cfg)
		}
	}
	if set != nil && set.Unknown(want) != nil {
		set = c.keys.Adopt(pairOf(current[c.keys.Config()])) // a reshard may have added them
	}
	if set != nil {
		if err := set.Unknown(want); err != nil {
			return nil, err
		}
	}

	tokens := make(map[shard.Lock]shard.Token, len(want))
	alive := false // evidence that the session exists: a key it holds, or a lock it got
	var toLock []shard.Acquisition
	for _, a := range want {
		kv := current[c.keys.Lock(a.Lock)]
		switch {
		case kv != nil && kv.Session == string(id):
			tokens[a.Lock] = fleetkeys.DecodeLock(pairOf(kv)).Token
			alive = true
		case kv != nil && kv.Session != "":
			// held by another session
		default:
			toLock = append(toLock, a)
		}
	}
	since := now()
	gen, err := c.keys.LockGeneration(fleetkeys.GenerationOf(pairOf(current[c.keys.Config()])))
	if err != nil {
		return nil, err
	}
	for batch := range slices.Chunk(toLock, MaxTxnShards) {
		got, err := c.lockBatch(octx, id, info.worker, batch, since, &gen)
		for lk, t := range got {
			tokens[lk] = t
			alive = true
		}
		if err != nil {
			return fleetkeys.GrantsInOrder(want, tokens), err
		}
	}
	if !alive {
		if err := c.requireSession(octx, id); err != nil {
			return nil, err
		}
	}
	return fleetkeys.GrantsInOrder(want, tokens), nil
}

// configCheck is the transaction operation that fails unless P/config
// (key) is still as g was read.
func configCheck(g fleetkeys.Generation, key string) *api.TxnOp {
	if g.Index == 0 {
		return &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: key}}
	}
	return &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVCheckIndex, Key: key, Index: g.Index}}
}

// configMoved tells a refusal of a lock transaction's first operation,
// the check of P/config, because the config changed (or appeared, or
// went) since it was read; any other refusal of it (a permission) is the
// transaction's failure.
func configMoved(e *api.TxnError) bool {
	if e.OpIndex != 0 {
		return false
	}
	switch consulkv.ClassifyRefusal(e.What) {
	case consulkv.RefusedPermission, consulkv.RefusedBadSession:
		return false
	}
	return true
}

// maxGenerationReads bounds how often one lockBatch reads P/config again
// after it changed under a transaction.
const maxGenerationReads = 5

// lockBatch takes up to MaxTxnShards locks in one committed transaction,
// dropping the ones Consul refuses and trying again with the rest. The
// transaction's first operation checks that P/config is as gen was read;
// when it was rewritten meanwhile (the generation raised), gen is read
// again and the transaction sent again.
func (c *Coordinator) lockBatch(ctx context.Context, id shard.SessionID, worker string, batch []shard.Acquisition, since time.Time, gen *fleetkeys.Generation) (map[shard.Lock]shard.Token, error) {
	pending := slices.Clone(batch)
	reads := 0
	for {
		// A reshard decides which shards may be locked under the config
		// read (gen); the transaction checks that config's index.
		pending = slices.DeleteFunc(pending, func(a shard.Acquisition) bool { return !gen.Acquirable(a.Lock) })
		if len(pending) == 0 {
			return nil, nil
		}
		ops := make(api.TxnOps, 0, 1+2*len(pending))
		ops = append(ops, configCheck(*gen, c.keys.Config()))
		for _, a := range pending {
			value, err := json.Marshal(shard.Owner{Worker: worker, Why: a.Why, Since: since, Gen: gen.Gen})
			if err != nil {
				return nil, err
			}
			key := c.keys.Lock(a.Lock)
			ops = append(ops,
				&api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVLock, Key: key, Value: value, Session: string(id)}},
				&api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVGet, Key: key}})
		}
		results, txnErrs, err := c.txn(ctx, "acquire", ops)
		if err != nil {
			return nil, err
		}
		if len(txnErrs) == 0 {
			got := make(map[shard.Lock]shard.Token, len(pending))
			for _, r := range results {
				// The get's entry (the lock's has the same index).
				if r.KV != nil && r.KV.Session == string(id) && r.KV.Key != c.keys.Config() {
					lk := c.keys.LockOf(r.KV.Key)
					t, err := shard.MakeToken(gen.Gen, r.KV.ModifyIndex)
					if err != nil {
						return got, err
					}
					got[lk] = max(got[lk], t)
				}
			}
			return got, nil
		}
		for _, e := range txnErrs {
			if consulkv.ClassifyRefusal(e.What) == consulkv.RefusedBadSession {
				return nil, sessionGone(id, "does not exist (expired, destroyed or never created): "+e.What)
			}
		}
		if slices.ContainsFunc(txnErrs, configMoved) {
			if reads++; reads > maxGenerationReads {
				return nil, fmt.Errorf("%w: consul acquire: the fleet's config at %q changed under %d transactions in a row",
					shard.ErrUnavailable, c.keys.Config(), maxGenerationReads)
			}
			kv, _, err := c.kv.Get(ctx, c.keys.Config(), consulkv.Query{})
			if err != nil {
				return nil, c.fail(ctx, "acquire (read config)", err)
			}
			if *gen, err = c.keys.LockGeneration(fleetkeys.GenerationOf(pairOf(kv))); err != nil {
				return nil, err
			}
			continue
		}
		refused := map[int]bool{}
		for _, e := range txnErrs {
			i := (e.OpIndex - 1) / 2
			switch consulkv.ClassifyRefusal(e.What) {
			case consulkv.RefusedHeld, consulkv.RefusedLockDelay:
				if i < len(pending) {
					refused[i] = true
				}
			case consulkv.RefusedKeyMissing:
				// The get after a lock that failed on a key that did not
				// exist: a consequence, not a cause.
			default:
				return nil, c.txnFailure("acquire", txnErrs)
			}
		}
		if len(refused) == 0 {
			return nil, c.txnFailure("acquire", txnErrs)
		}
		next := pending[:0:0]
		for i, a := range pending {
			if !refused[i] {
				next = append(next, a)
			}
		}
		pending = next
	}
}

// Release unlocks the locks among ls that the session holds,
// MaxTxnShards per transaction, recording why in their value
// (Owner.Released; the rest of the value stays). A voluntary unlock sets no
// lock-delay. Locks the session does not hold are ignored; a missing
// session wraps shard.ErrSessionInvalid.
func (l locks) Release(ctx context.Context, id shard.SessionID, ls []shard.Lock, why shard.Reason) error {
	c := l.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	var keys []string
	for _, lk := range fleetkeys.UniqueBy(ls, func(lk shard.Lock) shard.Lock { return lk }) {
		if lk.Validate() == nil {
			keys = append(keys, c.keys.Lock(lk))
		}
	}
	current, err := c.readKeys(octx, "release (read)", keys)
	if err != nil {
		return err
	}
	var held []*api.KVPair
	for _, k := range keys {
		if kv := current[k]; kv != nil && kv.Session == string(id) {
			var o shard.Owner
			_ = json.Unmarshal(kv.Value, &o) // a malformed value is replaced
			o.Released = why
			value, err := json.Marshal(o)
			if err != nil {
				return err
			}
			held = append(held, &api.KVPair{Key: k, Value: value})
		}
	}
	if len(held) == 0 {
		return c.requireSession(octx, id)
	}
	return c.unlock(octx, id, held, "release")
}

// Watch is one blocking query on a lock's key (a KV get with WaitIndex
// after), bounded as the fleet's watches are. Index is Consul's
// X-Consul-Index for the key: its ModifyIndex while it exists. While it is
// missing, Consul 1.14 answers with the KV store's highest index: a watch
// asked with an older index returns at once, and one that is blocked
// returns when the key is written or WatchWait passes (see
// assignments.Watch). A held key whose value cannot be read is returned
// with its session and token and Problem saying what is wrong.
func (l locks) Watch(ctx context.Context, lock shard.Lock, after uint64) (shard.LockKey, error) {
	c := l.c
	if err := ctxErr(ctx); err != nil {
		return shard.LockKey{}, err
	}
	if err := lock.Validate(); err != nil {
		return shard.LockKey{}, err
	}
	kv, index, err := c.watchKey(ctx, "watch lock "+string(lock), c.keys.Lock(lock), after)
	if err != nil {
		return shard.LockKey{}, err
	}
	if kv == nil {
		return shard.LockKey{Index: index}, nil
	}
	key := fleetkeys.DecodeLock(pairOf(kv))
	key.Index = index
	return key, nil
}

// unlock releases keys held by the session with the given values,
// MaxTxnShards per transaction. Keys the session turns out not to hold any
// more (an operator deleted them, or the session just ended) are dropped.
func (c *Coordinator) unlock(ctx context.Context, id shard.SessionID, keys []*api.KVPair, op string) error {
	for batch := range slices.Chunk(keys, MaxTxnShards) {
		pending := slices.Clone(batch)
		for len(pending) > 0 {
			ops := make(api.TxnOps, len(pending))
			for i, kv := range pending {
				ops[i] = &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVUnlock, Key: kv.Key, Value: kv.Value, Session: string(id)}}
			}
			_, txnErrs, err := c.txn(ctx, op, ops)
			if err != nil {
				return err
			}
			if len(txnErrs) == 0 {
				break
			}
			refused := map[int]bool{}
			for _, e := range txnErrs {
				if consulkv.ClassifyRefusal(e.What) != consulkv.RefusedNotHeld || e.OpIndex >= len(pending) {
					return c.txnFailure(op, txnErrs)
				}
				refused[e.OpIndex] = true
			}
			next := pending[:0:0]
			for i, kv := range pending {
				if !refused[i] {
					next = append(next, kv)
				}
			}
			pending = next
		}
	}
	return nil
}

// DeleteShard deletes a shard's lock key, as an operator might with
// `consul kv delete`, and reports whether it existed. The next owner still
// gets a higher token: its lock is a later Raft write than the delete. A
// session that held the key simply no longer holds it.
func (c *Coordinator) DeleteShard(ctx context.Context, id shard.ID) (bool, error) {
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	kv, _, err := c.kv.Get(octx, c.keys.Shard(id), consulkv.Query{})
	if err != nil {
		return false, c.fail(octx, "delete shard (read)", err)
	}
	if kv == nil {
		return false, nil
	}
	if err := c.kv.Delete(octx, c.keys.Shard(id)); err != nil {
		return false, c.fail(octx, "delete shard", err)
	}
	return true, nil
}

// DeleteFreeShard deletes a shard's lock key only if no session holds it,
// in one check-and-delete on the index it read, so a worker that acquires
// the shard meanwhile keeps it: the delete is then refused with
// shard.ErrKeyHeld. It reports whether the key existed.
func (c *Coordinator) DeleteFreeShard(ctx context.Context, id shard.ID) (bool, error) {
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	for {
		kv, _, err := c.kv.Get(octx, c.keys.Shard(id), consulkv.Query{})
		if err != nil {
			return false, c.fail(octx, "delete free shard (read)", err)
		}
		if kv == nil {
			return false, nil
		}
		if kv.Session != "" {
			return true, fmt.Errorf("%w: %s is held by session %s", shard.ErrKeyHeld, c.keys.Shard(id), kv.Session)
		}
		deleted, err := c.kv.DeleteCAS(octx, kv)
		if err != nil {
			return false, c.fail(octx, "delete free shard", err)
		}
		if deleted {
			return true, nil
		}
		// The key changed since the read: read it again and decide anew.
	}
}

package consul

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/shard"
)

// Acquire locks, for the session, every wanted shard that is free and not
// in lock-delay, and returns a claim for each shard the session holds
// afterwards, in the order asked for (a shard asked for twice counts once,
// with the first reason).
//
// It reads the wanted keys first (get-tree, MaxTxnOps per read), so that a
// shard the session already holds is returned with its current token and
// not locked again: a re-lock is a write and would move the token. The
// others are locked MaxTxnShards per transaction, each shard as a lock and
// a get; the get's ModifyIndex is the claim's token, and every shard of one
// transaction shares it. Consul rolls a transaction back if any lock in it
// fails: the shards it names as held by another session or in lock-delay
// are dropped and the rest sent again, until a transaction commits or
// nothing is left. Shards left out are not an error.
//
// Errors: an empty shard ID (shard.ErrInvalidArgument) or one outside the
// fleet's config (shard.ErrUnknownShard: the one Configure settled, else
// the stored one) before anything is written; a
// missing session (shard.ErrSessionInvalid); Consul unavailable
// (shard.ErrUnavailable). An error after some transactions committed
// returns the claims they granted along with it.
//
// Two concurrent Acquire calls of one session for the same shard may both
// lock it (the second one moves the token); shardlease's worker never does
// that.
func (c *Coordinator) Acquire(ctx context.Context, id shard.SessionID, want []shard.Acquisition) ([]shard.Claim, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	for _, a := range want {
		if a.Shard == "" {
			return nil, fmt.Errorf("%w: shard id is empty", shard.ErrInvalidArgument)
		}
	}
	want = uniqueBy(want, func(a shard.Acquisition) shard.ID { return a.Shard })
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	info, err := c.lookup(octx, id)
	if err != nil {
		return nil, err
	}

	keys := make([]string, 0, len(want)+1)
	for _, a := range want {
		keys = append(keys, c.shardKey(a.Shard))
	}
	set := c.fleetShards()
	if set == nil {
		keys = append(keys, c.configKey()) // not configured: the stored shard set, in the same read
	}
	current, err := c.readKeys(octx, "acquire (read)", keys)
	if err != nil {
		return nil, err
	}
	if kv := current[c.configKey()]; set == nil && kv != nil {
		if cfg, err := parseConfig(kv.Value); err == nil {
			set = c.storedShards(cfg)
		}
	}
	if set != nil {
		for _, a := range want {
			if !set.ids[a.Shard] {
				return nil, fmt.Errorf("%w: %q is not one of the fleet's %d shards named %q",
					shard.ErrUnknownShard, a.Shard, set.cfg.Shards, set.cfg.Name)
			}
		}
	}

	tokens := make(map[shard.ID]shard.Token, len(want))
	alive := false // evidence that the session exists: a key it holds, or a lock it got
	var toLock []shard.Acquisition
	for _, a := range want {
		kv := current[c.shardKey(a.Shard)]
		switch {
		case kv != nil && kv.Session == string(id):
			tokens[a.Shard] = shard.Token(kv.ModifyIndex)
			alive = true
		case kv != nil && kv.Session != "":
			// held by another session
		default:
			toLock = append(toLock, a)
		}
	}
	since := now()
	for batch := range slices.Chunk(toLock, MaxTxnShards) {
		got, err := c.lockBatch(octx, id, info.worker, batch, since)
		for sh, t := range got {
			tokens[sh] = t
			alive = true
		}
		if err != nil {
			return claimsInOrder(want, tokens), err
		}
	}
	if !alive {
		if err := c.requireSession(octx, id); err != nil {
			return nil, err
		}
	}
	return claimsInOrder(want, tokens), nil
}

// lockBatch locks up to MaxTxnShards shards in one committed transaction,
// dropping the ones Consul refuses and trying again with the rest.
func (c *Coordinator) lockBatch(ctx context.Context, id shard.SessionID, worker string, batch []shard.Acquisition, since time.Time) (map[shard.ID]shard.Token, error) {
	pending := slices.Clone(batch)
	for len(pending) > 0 {
		ops := make(api.TxnOps, 0, 2*len(pending))
		for _, a := range pending {
			value, err := json.Marshal(shard.Owner{Worker: worker, Reason: a.Reason, Since: since})
			if err != nil {
				return nil, err
			}
			key := c.shardKey(a.Shard)
			ops = append(ops,
				&api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVLock, Key: key, Value: value, Session: string(id)}},
				&api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVGet, Key: key}})
		}
		results, txnErrs, err := c.txn(ctx, "acquire", ops)
		if err != nil {
			return nil, err
		}
		if len(txnErrs) == 0 {
			got := make(map[shard.ID]shard.Token, len(pending))
			for _, r := range results {
				// The get's entry (the lock's has the same index).
				if r.KV != nil && r.KV.Session == string(id) && c.isShardKey(r.KV.Key) {
					sh := c.shardOfKey(r.KV.Key)
					got[sh] = max(got[sh], shard.Token(r.KV.ModifyIndex))
				}
			}
			return got, nil
		}
		for _, e := range txnErrs {
			if consulkv.ClassifyRefusal(e.What) == consulkv.RefusedBadSession {
				return nil, sessionGone(id, "does not exist (expired, destroyed or never created): "+e.What)
			}
		}
		refused := map[int]bool{}
		for _, e := range txnErrs {
			i := e.OpIndex / 2
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
	return nil, nil
}

// Release unlocks the shards among ids that the session holds,
// MaxTxnShards per transaction, recording why in their value
// (Owner.Released; the rest of the value stays). A voluntary unlock sets no
// lock-delay. Shards the session does not hold are ignored; a missing
// session wraps shard.ErrSessionInvalid.
func (c *Coordinator) Release(ctx context.Context, id shard.SessionID, ids []shard.ID, why string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	var keys []string
	for _, sh := range uniqueBy(ids, func(sh shard.ID) shard.ID { return sh }) {
		if sh != "" {
			keys = append(keys, c.shardKey(sh))
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
	kv, _, err := c.kv.Get(octx, c.shardKey(id), consulkv.Query{})
	if err != nil {
		return false, c.fail(octx, "delete shard (read)", err)
	}
	if kv == nil {
		return false, nil
	}
	if err := c.kv.Delete(octx, c.shardKey(id)); err != nil {
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
		kv, _, err := c.kv.Get(octx, c.shardKey(id), consulkv.Query{})
		if err != nil {
			return false, c.fail(octx, "delete free shard (read)", err)
		}
		if kv == nil {
			return false, nil
		}
		if kv.Session != "" {
			return true, fmt.Errorf("%w: %s is held by session %s", shard.ErrKeyHeld, c.shardKey(id), kv.Session)
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

func claimsInOrder(want []shard.Acquisition, tokens map[shard.ID]shard.Token) []shard.Claim {
	claims := make([]shard.Claim, 0, len(tokens))
	for _, a := range want {
		if t, ok := tokens[a.Shard]; ok {
			claims = append(claims, shard.Claim{Shard: a.Shard, Token: t})
		}
	}
	return claims
}

// uniqueBy returns xs without the elements whose key was seen before, in
// order. It does not modify xs.
func uniqueBy[T any](xs []T, key func(T) shard.ID) []T {
	seen := make(map[shard.ID]bool, len(xs))
	out := make([]T, 0, len(xs))
	for _, x := range xs {
		if k := key(x); !seen[k] {
			seen[k] = true
			out = append(out, x)
		}
	}
	return out
}

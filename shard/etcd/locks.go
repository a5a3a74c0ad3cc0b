package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// maxAttempts bounds how many times one batch is read and tried again
// after its transaction lost to another writer.
const maxAttempts = 8

// Acquire locks the free locks of want with the session, MaxTxnShards per
// transaction. A lock is free when its key is missing or released, or
// when the session it names has ended and that session's lock-delay has
// passed since this coordinator first knew (deadSince). Each transaction
// compares the config's revision (its generation is in every token), the
// session's key (it still exists) and each lock's revision as read, and
// writes every lock of the batch: their token is the transaction's
// revision.
func (l locks) Acquire(ctx context.Context, id shard.SessionID, want []shard.Acquisition) ([]shard.Grant, error) {
	c := l.c
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	want = fleetkeys.UniqueBy(want, func(a shard.Acquisition) shard.Lock { return a.Lock })
	for _, a := range want {
		if err := a.Lock.Validate(); err != nil {
			return nil, err
		}
	}
	if _, ok := leaseOf(id); !ok {
		return nil, sessionGone(id, "is not an etcd session id")
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	set, err := c.shardSet(octx, "acquire (read config)")
	if err != nil {
		return nil, err
	}
	if set != nil && set.Unknown(want) != nil {
		if set, err = c.adoptStored(octx, "acquire (read config)"); err != nil { // a reshard may have added them
			return nil, err
		}
	}
	if set != nil {
		if err := set.Unknown(want); err != nil {
			return nil, err
		}
	}
	tokens := make(map[shard.Lock]shard.Token, len(want))
	for batch := range slices.Chunk(want, MaxTxnShards) {
		err := c.lockBatch(octx, id, batch, tokens)
		if err != nil {
			return fleetkeys.GrantsInOrder(want, tokens), err
		}
	}
	return fleetkeys.GrantsInOrder(want, tokens), nil
}

// session reads session id's key from kvs: its info, or ErrSessionInvalid
// when the key is missing (a lease alive without its key is ended).
func (c *Coordinator) session(ctx context.Context, id shard.SessionID, kvs map[string]*mvccpb.KeyValue) (*mvccpb.KeyValue, sessionInfo, error) {
	kv := kvs[c.sessionKey(id)]
	if kv == nil {
		if _, err := c.deadSince(ctx, id); err != nil {
			return nil, sessionInfo{}, err
		}
		return nil, sessionInfo{}, sessionGone(id, "does not exist (expired, revoked or never created)")
	}
	var info sessionInfo
	_ = json.Unmarshal(kv.Value, &info) // a session key written by hand: no worker, no lock-delay
	return kv, info, nil
}

// sessionExists compares that session key kv is still the one read.
func sessionExists(kv *mvccpb.KeyValue) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(string(kv.Key)), "=", kv.CreateRevision)
}

// unchanged compares that key is as read (kv nil: missing).
func unchanged(key string, kv *mvccpb.KeyValue) clientv3.Cmp {
	if kv == nil {
		return clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	}
	return clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)
}

// lockBatch takes the free locks of batch, adding their tokens (and those
// of the locks the session holds already) to tokens.
func (c *Coordinator) lockBatch(ctx context.Context, id shard.SessionID, batch []shard.Acquisition, tokens map[shard.Lock]shard.Token) error {
	for attempt := 0; ; attempt++ {
		keys := make([]string, 0, len(batch)+2)
		for _, a := range batch {
			keys = append(keys, c.keys.Lock(a.Lock))
		}
		keys = append(keys, c.keys.Config(), c.sessionKey(id))
		kvs, _, err := c.readKeys(ctx, "acquire (read)", keys)
		if err != nil {
			return err
		}
		own, info, err := c.session(ctx, id, kvs)
		if err != nil {
			return err
		}
		config := kvs[c.keys.Config()]
		gen, err := c.keys.LockGeneration(fleetkeys.GenerationOf(c.pairOf(config, nil)))
		if err != nil {
			return err
		}
		free, err := c.freeLocks(ctx, id, batch, kvs, tokens)
		if err != nil {
			return err
		}
		// A reshard decides which shards may be locked under the config
		// read; the transaction compares that config's revision.
		free = slices.DeleteFunc(free, func(a shard.Acquisition) bool { return !gen.Acquirable(a.Lock) })
		if len(free) == 0 {
			return nil
		}
		since := now()
		cmps := []clientv3.Cmp{unchanged(c.keys.Config(), config), sessionExists(own)}
		puts := make([]clientv3.Op, 0, len(free))
		for _, a := range free {
			key := c.keys.Lock(a.Lock)
			value, err := json.Marshal(shard.Owner{Worker: info.Worker, Why: a.Why, Since: since, Gen: gen.Gen})
			if err != nil {
				return err
			}
			cmps = append(cmps, unchanged(key, kvs[key]))
			puts = append(puts, clientv3.OpPut(key, wrap(id, info.lockDelay(), value)))
		}
		resp, err := c.cli.Txn(ctx).If(cmps...).Then(puts...).Commit()
		if err != nil {
			return c.fail(ctx, "acquire", err)
		}
		if resp.Succeeded {
			t, err := shard.MakeToken(gen.Gen, uint64(resp.Header.Revision))
			if err != nil {
				return err
			}
			for _, a := range free {
				tokens[a.Lock] = t
				c.noteGrant(c.keys.Lock(a.Lock), id, resp.Header.Revision)
			}
			return nil
		}
		if attempt+1 == maxAttempts {
			return fmt.Errorf("%w: etcd acquire: the locks or the fleet's config changed under %d transactions in a row", shard.ErrUnavailable, maxAttempts)
		}
	}
}

// grant is a lock this coordinator took: the session and the revision.
type grant struct {
	session  shard.SessionID
	revision int64
}

// noteGrant records that session took the lock at key at revision.
func (c *Coordinator) noteGrant(key string, session shard.SessionID, revision int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.granted[key] = grant{session, revision}
}

// tookIt reports whether this coordinator took the lock kv for session at
// kv's revision: only then is a lock naming the session its own. Consul
// guarantees this itself (a plain write keeps a key's session and cannot
// set one); on etcd a hand-written envelope could name any session.
func (c *Coordinator) tookIt(kv *mvccpb.KeyValue, session shard.SessionID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.granted[string(kv.Key)]
	return ok && g.session == session && g.revision == kv.ModRevision
}

// freeLocks returns the locks of batch that the session may take as kvs
// read them, and adds to tokens those it holds already. Another
// session's lock is free once that session has ended and its lock-delay
// has passed; a lock whose value cannot be read is held by nobody known,
// and never free.
func (c *Coordinator) freeLocks(ctx context.Context, id shard.SessionID, batch []shard.Acquisition, kvs map[string]*mvccpb.KeyValue, tokens map[shard.Lock]shard.Token) ([]shard.Acquisition, error) {
	var free, others []shard.Acquisition
	for _, a := range batch {
		kv := kvs[c.keys.Lock(a.Lock)]
		if kv == nil {
			free = append(free, a)
			continue
		}
		e, ok := unwrap(kv.Value)
		switch {
		case !ok:
		case e.Session == id && c.tookIt(kv, id):
			tokens[a.Lock] = fleetkeys.DecodeLock(c.pairOf(kv, func(shard.SessionID) bool { return true })).Token
		case e.Session == id:
			// Named by a write this coordinator did not make (etcdctl put of
			// a well-formed envelope): the session never acquired it, and
			// whoever did may still run it. Held by nobody known.
		case e.Session == "":
			free = append(free, a)
		default:
			others = append(others, a)
		}
	}
	if len(others) == 0 {
		return free, nil
	}
	named := make(map[string]*mvccpb.KeyValue, len(others))
	for _, a := range others {
		named[string(a.Lock)] = kvs[c.keys.Lock(a.Lock)]
	}
	live, err := c.liveSessions(ctx, "acquire (read holders)", holders(named))
	if err != nil {
		return nil, err
	}
	for _, a := range others {
		e, _ := unwrap(kvs[c.keys.Lock(a.Lock)].Value)
		if live[e.Session] {
			continue
		}
		ended, err := c.deadSince(ctx, e.Session)
		if err != nil {
			return nil, err
		}
		if !now().Before(ended.Add(e.lockDelay())) {
			free = append(free, a)
		}
	}
	return free, nil
}

// Release marks the locks among ls that the session holds free, recording
// why in their value (Owner.Released), MaxTxnShards per transaction that
// compares each lock's revision as read. A voluntary release sets no
// lock-delay. Locks the session does not hold are ignored; a missing
// session wraps shard.ErrSessionInvalid.
func (l locks) Release(ctx context.Context, id shard.SessionID, ls []shard.Lock, why shard.Reason) error {
	c := l.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if _, ok := leaseOf(id); !ok {
		return sessionGone(id, "is not an etcd session id")
	}
	ls = fleetkeys.UniqueBy(ls, func(lk shard.Lock) shard.Lock { return lk })
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	if len(ls) == 0 {
		kvs, _, err := c.readKeys(octx, "release (read session)", []string{c.sessionKey(id)})
		if err != nil {
			return err
		}
		_, _, err = c.session(octx, id, kvs)
		return err
	}
	for batch := range slices.Chunk(ls, MaxTxnShards) {
		if err := c.unlockBatch(octx, id, batch, why); err != nil {
			return err
		}
	}
	return nil
}

// unlockBatch releases the locks of batch the session holds.
func (c *Coordinator) unlockBatch(ctx context.Context, id shard.SessionID, batch []shard.Lock, why shard.Reason) error {
	for attempt := 0; ; attempt++ {
		keys := make([]string, 0, len(batch)+1)
		for _, lk := range batch {
			keys = append(keys, c.keys.Lock(lk))
		}
		keys = append(keys, c.sessionKey(id))
		kvs, _, err := c.readKeys(ctx, "release (read)", keys)
		if err != nil {
			return err
		}
		own, _, err := c.session(ctx, id, kvs)
		if err != nil {
			return err
		}
		// The session's key is compared too: a session that ended since
		// the read releases nothing (its locks keep their lock-delay).
		cmps := []clientv3.Cmp{sessionExists(own)}
		var puts []clientv3.Op
		for _, lk := range batch {
			key := c.keys.Lock(lk)
			kv := kvs[key]
			if kv == nil {
				continue
			}
			e, ok := unwrap(kv.Value)
			if !ok || e.Session != id {
				continue
			}
			var o shard.Owner
			_ = json.Unmarshal(e.Value, &o) // an unreadable owner is replaced by the release's
			o.Released = why
			value, err := json.Marshal(o)
			if err != nil {
				return err
			}
			cmps = append(cmps, unchanged(key, kv))
			puts = append(puts, clientv3.OpPut(key, wrap("", 0, value)))
		}
		if len(puts) == 0 {
			return nil
		}
		resp, err := c.cli.Txn(ctx).If(cmps...).Then(puts...).Commit()
		if err != nil {
			return c.fail(ctx, "release", err)
		}
		if resp.Succeeded {
			return nil
		}
		if attempt+1 == maxAttempts {
			return fmt.Errorf("%w: etcd release: the locks changed under %d transactions in a row", shard.ErrUnavailable, maxAttempts)
		}
	}
}

// Watch returns the lock's key once it or its holder's session changed
// past after (follow).
func (l locks) Watch(ctx context.Context, lock shard.Lock, after uint64) (shard.LockKey, error) {
	c := l.c
	if err := lock.Validate(); err != nil {
		return shard.LockKey{}, err
	}
	key := c.keys.Lock(lock)
	var got shard.LockKey
	index, err := c.follow(ctx, "watch lock "+string(lock), after, func(ctx context.Context) ([]string, uint64, int64, error) {
		keys, rev, err := c.readHeld(ctx, "watch lock "+string(lock), []string{key})
		if err != nil {
			return nil, 0, 0, err
		}
		h := keys[key]
		got = shard.LockKey{}
		if h.pair == nil {
			return []string{key}, h.index(rev), rev, nil
		}
		got = fleetkeys.DecodeLock(h.pair)
		return c.watched(key, h), h.index(rev), rev, nil
	})
	if err != nil {
		return shard.LockKey{}, err
	}
	got.Index = index
	return got, nil
}

package etcd

import (
	"context"
	"slices"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// maxTxnOps is etcd's default cap on the operations of one branch of a
// transaction (--max-txn-ops).
const maxTxnOps = 128

// readKeys reads keys, maxTxnOps per transaction (so at one revision when
// there are no more), and returns those that exist by key and the
// revision of the last read.
func (c *Coordinator) readKeys(ctx context.Context, op string, keys []string) (map[string]*mvccpb.KeyValue, int64, error) {
	got := make(map[string]*mvccpb.KeyValue, len(keys))
	var rev int64
	for batch := range slices.Chunk(keys, maxTxnOps) {
		ops := make([]clientv3.Op, len(batch))
		for i, k := range batch {
			ops[i] = clientv3.OpGet(k)
		}
		resp, err := c.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return nil, 0, c.fail(ctx, op, err)
		}
		rev = resp.Header.Revision
		for _, r := range resp.Responses {
			for _, kv := range r.GetResponseRange().Kvs {
				got[string(kv.Key)] = kv
			}
		}
	}
	return got, rev, nil
}

// liveSessions reads the keys of sessions and reports which exist.
func (c *Coordinator) liveSessions(ctx context.Context, op string, sessions []shard.SessionID) (map[shard.SessionID]bool, error) {
	keys := make([]string, 0, len(sessions))
	for _, s := range sessions {
		keys = append(keys, c.sessionKey(s))
	}
	got, _, err := c.readKeys(ctx, op, keys)
	if err != nil {
		return nil, err
	}
	live := make(map[shard.SessionID]bool, len(sessions))
	for _, s := range sessions {
		if live[s] = got[c.sessionKey(s)] != nil; live[s] {
			c.forgetDead(s)
		}
	}
	return live, nil
}

// holders are the sessions the envelopes among kvs name, once each.
func holders(kvs map[string]*mvccpb.KeyValue) []shard.SessionID {
	var ids []shard.SessionID
	for _, kv := range kvs {
		if e, ok := unwrap(kv.Value); ok && e.Session != "" && !slices.Contains(ids, e.Session) {
			ids = append(ids, e.Session)
		}
	}
	return ids
}

// held is a key a session may hold, as a watch reads it.
type held struct {
	pair   *fleetkeys.Pair  // the key as the fleet's keys see it
	named  shard.SessionID  // the session its envelope names, live or not
	holder *mvccpb.KeyValue // the key of the live session holding it
	ended  bool             // it names a session whose key is gone
}

// watched is the keys a watch of h's key waits on: the key, and the key
// of the session it names, whose end (a delete) changes what the key
// means. An ended session's key is watched too: its delete may come after
// the caller's index, which a read cannot tell.
func (c *Coordinator) watched(key string, h held) []string {
	if h.named == "" {
		return []string{key}
	}
	return []string{key, c.sessionKey(h.named)}
}

// index is the key's blocking index in a read at revision rev (keyIndex).
func (h held) index(rev int64) uint64 {
	if h.pair == nil {
		return uint64(rev)
	}
	return keyIndex(h.pair, h.holder, h.ended, rev)
}

// readHeld reads keys and the keys of the sessions their envelopes name,
// and returns each key (missing ones too) as the fleet's keys see it,
// with the revision of the first read.
func (c *Coordinator) readHeld(ctx context.Context, op string, keys []string) (map[string]held, int64, error) {
	kvs, rev, err := c.readKeys(ctx, op, keys)
	if err != nil {
		return nil, 0, err
	}
	names := holders(kvs)
	sessionKeys := make([]string, len(names))
	for i, s := range names {
		sessionKeys[i] = c.sessionKey(s)
	}
	sessions, _, err := c.readKeys(ctx, op, sessionKeys)
	if err != nil {
		return nil, 0, err
	}
	out := make(map[string]held, len(keys))
	for _, k := range keys {
		kv := kvs[k]
		if kv == nil {
			out[k] = held{}
			continue
		}
		var h held
		h.pair = c.pairOf(kv, func(s shard.SessionID) bool {
			h.named, h.holder = s, sessions[c.sessionKey(s)]
			h.ended = h.holder == nil
			return !h.ended
		})
		out[k] = h
	}
	return out, rev, nil
}

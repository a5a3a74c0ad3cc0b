package etcd

import (
	"context"
	"encoding/json"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// Join writes P/members/<m.ID> held by the session, its value the JSON of
// m without its Load and Standby (they have keys of their own), in a
// transaction comparing the key as read and the session's key. A key
// held by another live session wraps shard.ErrMemberExists and names it;
// one whose session ended is taken at once (member keys have no
// lock-delay: they give no ownership).
func (ms members) Join(ctx context.Context, id shard.SessionID, m shard.Member) error {
	c := ms.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if m.ID == "" {
		return fmt.Errorf("%w: member id is empty", shard.ErrInvalidArgument)
	}
	if _, ok := leaseOf(id); !ok {
		return sessionGone(id, "is not an etcd session id")
	}
	m.Load, m.Standby = nil, nil
	value, err := json.Marshal(m)
	if err != nil {
		return err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	key := c.keys.Member(m.ID)
	for attempt := 0; attempt < maxAttempts; attempt++ {
		kvs, _, err := c.readKeys(octx, "join (read)", []string{key, c.sessionKey(id)})
		if err != nil {
			return err
		}
		own, _, err := c.session(octx, id, kvs)
		if err != nil {
			return err
		}
		if e, ok := unwrap(valueOf(kvs[key])); ok && e.Session != "" && e.Session != id {
			live, err := c.liveSessions(octx, "join (read holder)", []shard.SessionID{e.Session})
			if err != nil {
				return err
			}
			if live[e.Session] {
				return fmt.Errorf("%w: worker %q is held by session %q", shard.ErrMemberExists, m.ID, e.Session)
			}
		}
		resp, err := c.cli.Txn(octx).
			If(unchanged(key, kvs[key]), sessionExists(own)).
			Then(clientv3.OpPut(key, wrap(id, 0, value))).
			Commit()
		if err != nil {
			return c.fail(octx, "join", err)
		}
		if resp.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("%w: etcd join: %q changed under %d transactions in a row", shard.ErrUnavailable, key, maxAttempts)
}

// Watch returns worker id's member key once it, or the session holding
// it, changed past after (follow): a worker learns there that its
// session was ended by someone else.
func (ms members) Watch(ctx context.Context, id string, after uint64) (shard.MemberKey, error) {
	c := ms.c
	if err := ctxErr(ctx); err != nil {
		return shard.MemberKey{}, err
	}
	if id == "" {
		return shard.MemberKey{}, fmt.Errorf("%w: member id is empty", shard.ErrInvalidArgument)
	}
	key := c.keys.Member(id)
	var got shard.MemberKey
	index, err := c.follow(ctx, "watch member "+id, after, func(ctx context.Context) ([]string, uint64, int64, error) {
		keys, rev, err := c.readHeld(ctx, "watch member "+id, []string{key})
		if err != nil {
			return nil, 0, 0, err
		}
		h := keys[key]
		got = shard.MemberKey{}
		if h.pair == nil {
			return []string{key}, h.index(rev), rev, nil
		}
		got.Exists = true
		got.Member, got.Problem = fleetkeys.DecodeMember(id, h.pair)
		return c.watched(key, h), h.index(rev), rev, nil
	})
	if err != nil {
		return shard.MemberKey{}, err
	}
	got.Index = index
	return got, nil
}

// valueOf is kv's value, nil for a missing key.
func valueOf(kv *mvccpb.KeyValue) []byte {
	if kv == nil {
		return nil
	}
	return kv.Value
}

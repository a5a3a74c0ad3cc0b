package consul

import (
	"context"
	"fmt"

	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// Watch is one blocking query on P/members/<id> (a KV get with
// WaitIndex after), bounded as Watch's are. It reads one key, so a worker
// can follow its own registration without listing the fleet.
//
// Index is Consul's X-Consul-Index for the key: its ModifyIndex while it
// exists. While it is missing, Consul answers with the highest index of
// the whole KV store, so its deletion wakes the watch once; after that,
// unlike on the embedded coordinator, a call asked with an index older
// than the store's returns at once, and a blocked one, which other keys'
// writes do not end, returns at WatchWait with the store's moved index —
// each time with Exists false (see Assignments.Watch, whose test measures
// it). A query that waits WatchWait without a change returns the index
// unchanged; shard.NextIndex tells the caller to wait again, and turns an
// index that went backwards (a Consul state reset) into a restart from 0. As with Watch, an after ahead of Consul's index
// blocks until the key changes or WatchWait passes, where the embedded
// coordinator returns at once.
//
// Member.Session is the key's lock holder: empty once the worker's session
// has ended, kept by an operator's plain put. A value that is not a JSON
// shard.Member, or names another worker, is returned with Exists set and
// Problem saying what is wrong. An empty id wraps shard.ErrInvalidArgument;
// a failure wraps shard.ErrUnavailable (or ErrPermissionDenied).
func (ms members) Watch(ctx context.Context, id string, after uint64) (shard.MemberKey, error) {
	c := ms.c
	if err := ctxErr(ctx); err != nil {
		return shard.MemberKey{}, err
	}
	if id == "" {
		return shard.MemberKey{}, fmt.Errorf("%w: member id is empty", shard.ErrInvalidArgument)
	}
	kv, index, err := c.watchKey(ctx, "watch member "+id, c.keys.Member(id), after)
	if err != nil {
		return shard.MemberKey{}, err
	}
	key := shard.MemberKey{Index: index}
	if kv == nil {
		return key, nil
	}
	key.Exists = true
	key.Member, key.Problem = fleetkeys.DecodeMember(id, pairOf(kv))
	if key.Problem != "" {
		key.Problem = kv.Key + ": " + key.Problem
	}
	return key, nil
}

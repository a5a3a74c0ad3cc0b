package etcd

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/shard"
)

// DeleteFreeShard deletes shard id's lock key unless a session holds it
// (admin.ShardKeyDeleter), in a transaction comparing the revision read;
// existed is false when there was no key. Held means, here: its session's
// key exists; its session ended less than its lock-delay ago (deleting
// the key would end the delay, which no operator's cleanup should); or
// its value cannot be read (its holder is unknown: delete it with
// etcdctl once no worker runs the shard). Each wraps shard.ErrKeyHeld.
func (c *Coordinator) DeleteFreeShard(ctx context.Context, id shard.ID) (bool, error) {
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	key := c.keys.Shard(id)
	for attempt := 0; attempt < maxAttempts; attempt++ {
		kvs, _, err := c.readKeys(octx, "delete free shard (read)", []string{key})
		if err != nil {
			return false, err
		}
		kv := kvs[key]
		if kv == nil {
			return false, nil
		}
		e, ok := unwrap(kv.Value)
		if !ok {
			return true, fmt.Errorf("%w: %s is not a key shardlease wrote, so its holder is unknown: delete it with etcdctl del once no worker runs %s", shard.ErrKeyHeld, key, id)
		}
		if e.Session != "" {
			live, err := c.liveSessions(octx, "delete free shard (read holder)", []shard.SessionID{e.Session})
			if err != nil {
				return false, err
			}
			if live[e.Session] {
				return true, fmt.Errorf("%w: %s is held by session %s", shard.ErrKeyHeld, key, e.Session)
			}
			ended, err := c.deadSince(octx, e.Session)
			if err != nil {
				return false, err
			}
			if left := time.Until(ended.Add(e.lockDelay())); left > 0 {
				return true, fmt.Errorf("%w: %s: its session %s ended and its lock-delay ends in %v; try again then", shard.ErrKeyHeld, key, e.Session, left.Round(time.Millisecond))
			}
		}
		resp, err := c.cli.Txn(octx).If(unchanged(key, kv)).Then(clientv3.OpDelete(key)).Commit()
		if err != nil {
			return false, c.fail(octx, "delete free shard", err)
		}
		if resp.Succeeded {
			return true, nil
		}
	}
	return false, fmt.Errorf("%w: etcd delete free shard: %q changed under %d transactions in a row", shard.ErrUnavailable, key, maxAttempts)
}

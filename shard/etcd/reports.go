package etcd

import (
	"context"
	"fmt"
	"iter"
	"maps"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// ReportLoad writes P/loads/<worker> (keycodec.EncodeLoad's JSON; report).
func (ms members) ReportLoad(ctx context.Context, id shard.SessionID, worker string, load map[shard.ID]float64) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	value, err := fleetkeys.LoadReport(worker, load)
	if err != nil {
		return err
	}
	return ms.c.report(ctx, id, worker, "loads", value, maps.Keys(load))
}

// ReportStandby writes P/standby/<worker> (keycodec.EncodeStandby's JSON
// for the configured fleet; report), or deletes it when states is empty.
func (ms members) ReportStandby(ctx context.Context, id shard.SessionID, worker string, states map[shard.ID]shard.StandbyState) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	value, err := fleetkeys.StandbyReport(ms.c.keys.Fleet(), worker, states)
	if err != nil {
		return err
	}
	return ms.c.report(ctx, id, worker, "standby", value, maps.Keys(states))
}

// report writes worker's report key of kind held by the session (value
// nil: deletes it), in a transaction comparing that the member key is as
// read, held by the session, and that the session's key exists.
func (c *Coordinator) report(ctx context.Context, id shard.SessionID, worker, kind string, value []byte, shards iter.Seq[shard.ID]) error {
	if err := fleetkeys.CheckReport(c.keys.Fleet(), kind, worker, shards); err != nil {
		return err
	}
	if _, ok := leaseOf(id); !ok {
		return sessionGone(id, "is not an etcd session id")
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	key, member := c.keys.Report(kind, worker), c.keys.Member(worker)
	write := clientv3.OpDelete(key)
	if value != nil {
		write = clientv3.OpPut(key, wrap(id, 0, value))
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		kvs, _, err := c.readKeys(octx, "report "+kind+" (read)", []string{member, c.sessionKey(id)})
		if err != nil {
			return err
		}
		own, _, err := c.session(octx, id, kvs)
		if err != nil {
			return err
		}
		e, ok := unwrap(valueOf(kvs[member]))
		if !ok || e.Session != id {
			holder := "it is missing"
			switch {
			case kvs[member] != nil && !ok:
				holder = "its value cannot be read"
			case kvs[member] != nil && e.Session == "":
				holder = "it is dead (held by no session)"
			case kvs[member] != nil:
				holder = fmt.Sprintf("session %q holds it", e.Session)
			}
			return fmt.Errorf("%w: session %q does not hold member key %q (%s): its %s are not written",
				shard.ErrNotMember, id, member, holder, kind)
		}
		resp, err := c.cli.Txn(octx).If(unchanged(member, kvs[member]), sessionExists(own)).Then(write).Commit()
		if err != nil {
			return c.fail(octx, "report "+kind, err)
		}
		if resp.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("%w: etcd report %s: %q changed under %d transactions in a row", shard.ErrUnavailable, kind, member, maxAttempts)
}

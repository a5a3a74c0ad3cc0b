package consul

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// reportKinds are the trees of the workers' report keys, P/<kind>/<worker>:
// keys of their own, held by the worker's session beside its member key,
// that it writes without touching the member key (where operators set
// drains and cordons).
var reportKinds = []string{"loads", "standby"}

func (c *Coordinator) reportKey(kind, worker string) string { return c.prefix + kind + "/" + worker }

// reportOf returns the kind and worker of a report key.
func (c *Coordinator) reportOf(key string) (kind, worker string, ok bool) {
	for _, kind := range reportKinds {
		if w, ok := strings.CutPrefix(key, c.prefix+kind+"/"); ok {
			return kind, w, true
		}
	}
	return "", "", false
}

func (c *Coordinator) isReportKey(key string) bool { _, _, ok := c.keys.ReportOf(key); return ok }

// reportKeys are worker's report keys.
func (c *Coordinator) reportKeys(worker string) []string {
	keys := make([]string, len(reportKinds))
	for i, kind := range reportKinds {
		keys[i] = c.keys.Report(kind, worker)
	}
	return keys
}

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

// ReportStandby writes P/standby/<worker> (keycodec.EncodeStandby's
// JSON for the configured fleet; report), or deletes it when states is
// empty: a worker with no standby leaves no key, which release 0.1.0
// would list as a foreign one. A fleet not configured yet wraps
// shard.ErrInvalidArgument.
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

// report writes worker's report key of kind in one transaction: a
// check-session of P/members/<worker> with the session, then a lock of
// the report key with it (a delete of the key when value is nil). The member key is only checked, never written,
// so an operator's drain or cordon on it cannot be overwritten by a
// report; and the report key, locked like the member key, loses its
// session when the worker's does, so a dead worker's figures are visibly
// dead (snapshots stop showing them) until the collector deletes them
// with its member key.
//
// Before anything is written: an empty worker wraps
// shard.ErrInvalidArgument (the caller checked the value); a shard
// outside the config Configure settled wraps shard.ErrUnknownShard.
// Consul refusing it: a session that is gone wraps
// shard.ErrSessionInvalid; a member key that is missing, dead or another
// session's wraps shard.ErrNotMember and names its holder; a report key
// in lock-delay (its last session was invalidated, not destroyed) wraps
// shard.ErrUnavailable; one held by another live session (an older
// session of the same worker ID whose member key was taken over) wraps
// shard.ErrMemberExists.
func (c *Coordinator) report(ctx context.Context, id shard.SessionID, worker, kind string, value []byte, shards iter.Seq[shard.ID]) error {
	if err := fleetkeys.CheckReport(c.keys.Fleet(), kind, worker, shards); err != nil {
		return err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	key := c.keys.Report(kind, worker)
	op := "report " + kind
	write := &api.KVTxnOp{Verb: api.KVLock, Key: key, Value: value, Session: string(id)}
	if value == nil { // nothing to report: no key
		write = &api.KVTxnOp{Verb: api.KVDelete, Key: key}
	}
	_, txnErrs, err := c.txn(octx, op, api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVCheckSession, Key: c.keys.Member(worker), Session: string(id)}},
		{KV: write},
	})
	if err != nil || len(txnErrs) == 0 {
		return err
	}
	refusals := map[consulkv.Refusal]bool{}
	for _, e := range txnErrs {
		refusals[consulkv.ClassifyRefusal(e.What)] = true
	}
	switch {
	case refusals[consulkv.RefusedBadSession]:
		return sessionGone(id, "does not exist (expired, destroyed or never created)")
	case refusals[consulkv.RefusedCheckFailed] || refusals[consulkv.RefusedKeyMissing]:
		return c.notMember(octx, id, worker, kind)
	case refusals[consulkv.RefusedLockDelay]:
		return fmt.Errorf("%w: %s key %q is in lock-delay after its previous session was invalidated; retry when the delay ends",
			shard.ErrUnavailable, kind, key)
	case refusals[consulkv.RefusedHeld]:
		return fmt.Errorf("%w: %s key %q is held by another live session of worker %q", shard.ErrMemberExists, kind, key, worker)
	default:
		return c.txnFailure(op, txnErrs)
	}
}

// notMember is report's error when the check of the member key failed:
// the session is gone (shard.ErrSessionInvalid), or the key is not its
// (shard.ErrNotMember, naming the holder as read just after).
func (c *Coordinator) notMember(ctx context.Context, id shard.SessionID, worker, kind string) error {
	if err := c.requireSession(ctx, id); err != nil {
		return err
	}
	holder, err := c.holderOf(ctx, c.keys.Member(worker), "it is dead (held by no session)", func(kv *api.KVPair) string {
		return fmt.Sprintf("session %q holds it", kv.Session)
	})
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: session %q does not hold member key %q (%s): its %s are not written",
		shard.ErrNotMember, id, c.keys.Member(worker), holder, kind)
}

// holderOf reads key to name its holder in an error message: "it is
// missing", free when no session holds it, else held's description. A
// failed read is named as such; only the caller's end of ctx is an error.
func (c *Coordinator) holderOf(ctx context.Context, key, free string, held func(*api.KVPair) string) (string, error) {
	kv, _, err := c.kv.Get(ctx, key, consulkv.Query{})
	switch {
	case err != nil && consulkv.CallerCause(ctx) != nil:
		return "", consulkv.CallerCause(ctx)
	case err != nil:
		return "its holder could not be read", nil
	case kv == nil:
		return "it is missing", nil
	case kv.Session == "":
		return free, nil
	}
	return held(kv), nil
}

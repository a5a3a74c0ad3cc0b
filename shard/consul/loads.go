package consul

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/internal/keycodec"
	"github.com/shardlease/shardlease/shard"
)

func (c *Coordinator) loadsKey(worker string) string { return c.prefix + "loads/" + worker }

func (c *Coordinator) isLoadsKey(key string) bool { return strings.HasPrefix(key, c.prefix+"loads/") }

// ReportLoad writes P/loads/<worker> (keycodec.EncodeLoad's JSON) in one
// transaction: a check-session of P/members/<worker> with the session,
// then a lock of the loads key with it. The member key is only checked,
// never written, so an operator's drain or cordon on it cannot be
// overwritten by a load report; and the loads key, locked like the member
// key, loses its session when the worker's does, so a dead worker's
// figures are visibly dead (snapshots stop showing them) until the
// collector deletes them with its member key.
//
// Before anything is written: bad figures, an empty worker or a value
// over shard.MaxLoadBytes wrap shard.ErrInvalidArgument; a shard outside
// the config Configure settled wraps shard.ErrUnknownShard. Consul refusing
// it: a session that is gone wraps shard.ErrSessionInvalid; a member key
// that is missing, dead or another session's wraps shard.ErrNotMember and
// names its holder; a loads key in lock-delay (its last session was
// invalidated, not destroyed) wraps shard.ErrUnavailable; one held by
// another live session (an older session of the same worker ID whose
// member key was taken over) wraps shard.ErrMemberExists.
func (ms members) ReportLoad(ctx context.Context, id shard.SessionID, worker string, load map[shard.ID]float64) error {
	c := ms.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if worker == "" {
		return fmt.Errorf("%w: report load: worker id is empty", shard.ErrInvalidArgument)
	}
	value, err := keycodec.EncodeLoad(worker, load)
	if err != nil {
		return err
	}
	if set := c.fleetShards(); set != nil {
		for sh := range load {
			if !set.ids[sh] {
				return fmt.Errorf("%w: loads of worker %q: %q is not one of the fleet's %d shards named %q",
					shard.ErrUnknownShard, worker, sh, set.cfg.Shards, set.cfg.Name)
			}
		}
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	key := c.loadsKey(worker)
	_, txnErrs, err := c.txn(octx, "report load", api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVCheckSession, Key: c.memberKey(worker), Session: string(id)}},
		{KV: &api.KVTxnOp{Verb: api.KVLock, Key: key, Value: value, Session: string(id)}},
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
		return c.notMember(octx, id, worker)
	case refusals[consulkv.RefusedLockDelay]:
		return fmt.Errorf("%w: loads key %q is in lock-delay after its previous session was invalidated; retry when the delay ends",
			shard.ErrUnavailable, key)
	case refusals[consulkv.RefusedHeld]:
		return fmt.Errorf("%w: loads key %q is held by another live session of worker %q", shard.ErrMemberExists, key, worker)
	default:
		return c.txnFailure("report load", txnErrs)
	}
}

// notMember is ReportLoad's error when the check of the member key
// failed: the session is gone (shard.ErrSessionInvalid), or the key is
// not its (shard.ErrNotMember, naming the holder as read just after).
func (c *Coordinator) notMember(ctx context.Context, id shard.SessionID, worker string) error {
	if err := c.requireSession(ctx, id); err != nil {
		return err
	}
	holder, err := c.holderOf(ctx, c.memberKey(worker), "it is dead (held by no session)", func(kv *api.KVPair) string {
		return fmt.Sprintf("session %q holds it", kv.Session)
	})
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: session %q does not hold member key %q (%s): its loads are not written",
		shard.ErrNotMember, id, c.memberKey(worker), holder)
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

// fillLoads sets each member's Load from its loads key in pairs while the
// member's live session holds that key; a member without one has none. A
// loads key that cannot be read is a problem; one of a
// worker without a member key is an orphan the collector deletes.
func (c *Coordinator) fillLoads(snap *shard.Snapshot, loads map[string]*api.KVPair) {
	for i := range snap.Members {
		m := &snap.Members[i]
		kv := loads[m.ID]
		if kv == nil || kv.Session == "" || shard.SessionID(kv.Session) != m.Session {
			continue
		}
		load, err := keycodec.DecodeLoad(kv.Value)
		if err != nil {
			snap.Problems = append(snap.Problems, fmt.Sprintf("%s: %v; the member's loads are ignored", kv.Key, err))
			m.Load = nil
			continue
		}
		m.Load = load
	}
}

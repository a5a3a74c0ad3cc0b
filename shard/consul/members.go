package consul

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// Configure stores cfg (normalized) at P/config if no config is stored, by a
// check-and-set with index 0 (create only), so that of several workers
// starting at once exactly one writes it and the others compare against it.
// Once it succeeds, the coordinator runs that config for good: a P/config
// rewritten later is reported in Snapshot.Problems, never adopted (see
// fleetconfig.go).
// A stored config that differs, in its shard set or its protocol (a stored
// config without one is protocol 1), is refused with
// shard.ConfigMismatch's error, which names both;
// one that is not a valid config also wraps shard.ErrConfigMismatch and says
// how to repair it. An invalid cfg gets cfg.Validate's error.
func (f fleet) Configure(ctx context.Context, cfg shard.Config) (shard.Config, error) {
	c := f.c
	if err := ctxErr(ctx); err != nil {
		return shard.Config{}, err
	}
	cfg, value, err := fleetkeys.ConfigValue(cfg)
	if err != nil {
		return shard.Config{}, err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()

	// The stored config may be deleted between a failed CAS and the read
	// (by an operator): try again, a few times.
	for range 3 {
		ok, err := c.kv.CAS(octx, &api.KVPair{Key: c.keys.Config(), Value: value, ModifyIndex: 0})
		if err != nil {
			return shard.Config{}, c.fail(octx, "configure", err)
		}
		if ok {
			c.keys.SetFleet(cfg)
			return cfg, nil
		}
		kv, _, err := c.kv.Get(octx, c.keys.Config(), consulkv.Query{})
		if err != nil {
			return shard.Config{}, c.fail(octx, "configure (read)", err)
		}
		if kv == nil {
			continue
		}
		stored, err := fleetkeys.ParseConfig(kv.Value)
		if err != nil {
			return shard.Config{}, fmt.Errorf("%w: the fleet's stored config at %q is not a valid config (%v); fix it or delete the key (`consul kv delete %s`)",
				shard.ErrConfigMismatch, c.keys.Config(), err, c.keys.Config())
		}
		if err := shard.ConfigMismatch(stored, cfg); err != nil {
			return stored, err
		}
		c.keys.NoteGeneration(stored.Generation)
		c.keys.SetFleet(stored)
		return stored, nil
	}
	return shard.Config{}, fmt.Errorf("%w: consul configure at %s: %q keeps disappearing between write and read",
		shard.ErrUnavailable, c.cfg.Address, c.keys.Config())
}

// Join acquires P/members/<m.ID> with the session, its value the JSON of m
// without its Load (loads have a key of their own: ReportLoad), in one
// transaction (one lock operation); if the session already holds the key,
// its value is updated. A key held by another session wraps
// shard.ErrMemberExists and names it.
//
// Unlike the embedded coordinator, Consul puts member keys under lock-delay
// too when a session is invalidated, so a crashed worker that restarts at
// once under the same ID is refused until the delay ends: that refusal
// wraps shard.ErrUnavailable (retry later), not shard.ErrMemberExists.
func (ms members) Join(ctx context.Context, id shard.SessionID, m shard.Member) error {
	c := ms.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if m.ID == "" {
		return fmt.Errorf("%w: member id is empty", shard.ErrInvalidArgument)
	}
	m.Load, m.Standby = nil, nil
	value, err := json.Marshal(m)
	if err != nil {
		return err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	key := c.keys.Member(m.ID)
	_, txnErrs, err := c.txn(octx, "join", api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVLock, Key: key, Value: value, Session: string(id)}},
	})
	if err != nil || len(txnErrs) == 0 {
		return err
	}
	e := txnErrs[0]
	switch consulkv.ClassifyRefusal(e.What) {
	case consulkv.RefusedBadSession:
		return sessionGone(id, "does not exist (expired, destroyed or never created)")
	case consulkv.RefusedLockDelay:
		return fmt.Errorf("%w: member key %q is in lock-delay after its previous session was invalidated; retry when the delay ends",
			shard.ErrUnavailable, key)
	case consulkv.RefusedHeld:
		holder := "another session"
		if kv, _, err := c.kv.Get(octx, key, consulkv.Query{}); err == nil && kv != nil && kv.Session != "" {
			holder = fmt.Sprintf("session %q", kv.Session)
		}
		return fmt.Errorf("%w: worker %q is held by %s", shard.ErrMemberExists, m.ID, holder)
	default:
		return c.txnFailure("join", txnErrs)
	}
}

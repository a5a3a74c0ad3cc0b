package etcd

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// Configure stores cfg (normalized, generation 0) at P/config if no config
// is stored, in a transaction that writes only a missing key, so that of
// several workers starting at once exactly one writes it and the others
// compare against it. Once it succeeds the coordinator runs that config
// for good (fleetkeys.Decoder). A stored config that differs is refused
// with shard.ConfigMismatch's error; one that is not a valid config wraps
// shard.ErrConfigMismatch and says how to repair it.
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
	key := c.keys.Config()
	resp, err := c.cli.Txn(octx).
		If(unchanged(key, nil)).
		Then(clientv3.OpPut(key, string(value))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return shard.Config{}, c.fail(octx, "configure", err)
	}
	if resp.Succeeded {
		c.keys.SetFleet(cfg)
		return cfg, nil
	}
	kv := resp.Responses[0].GetResponseRange().Kvs[0]
	stored, err := fleetkeys.ParseConfig(kv.Value)
	if err != nil {
		return shard.Config{}, fmt.Errorf("%w: the fleet's stored config at %q is not a valid config (%v); fix it or delete the key (`etcdctl del %s`)",
			shard.ErrConfigMismatch, key, err, key)
	}
	if err := shard.ConfigMismatch(stored, cfg); err != nil {
		return stored, err
	}
	c.keys.NoteGeneration(stored.Generation)
	c.keys.SetFleet(stored)
	return stored, nil
}

// RaiseGeneration rewrites P/config with Generation gen, in a transaction
// that compares the config read; read again when it lost to another write.
func (f fleet) RaiseGeneration(ctx context.Context, gen uint32) (shard.Config, error) {
	stored, err := f.c.rewriteConfig(ctx, "raise generation", fleetkeys.RaiseTo(gen))
	if err == nil {
		f.c.keys.NoteGeneration(gen)
	}
	return stored, err
}

// SetLayouts rewrites P/config's layouts from from to to
// (shard.NextLayouts), in a transaction that compares the config read,
// and runs the config written from then on.
func (f fleet) SetLayouts(ctx context.Context, from, to []shard.Layout) (shard.Config, error) {
	stored, err := f.c.rewriteConfig(ctx, "set layouts", func(stored shard.Config) (shard.Config, error) { return shard.NextLayouts(stored, from, to) })
	if err == nil {
		value, _ := json.Marshal(stored) // a Config always marshals
		f.c.keys.Adopt(&fleetkeys.Pair{Key: f.c.keys.Config(), Value: value})
	}
	return stored, err
}

// rewriteConfig writes P/config as change makes it from the stored one, in
// a transaction that compares the config read, which is read again when
// the write lost to another, a few times. A fleet with no config, or one
// that is not valid, wraps shard.ErrInvalidArgument; change's error is
// returned as it is, with the stored config.
func (c *Coordinator) rewriteConfig(ctx context.Context, op string, change func(shard.Config) (shard.Config, error)) (shard.Config, error) {
	if err := ctxErr(ctx); err != nil {
		return shard.Config{}, err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	key := c.keys.Config()
	for range 3 {
		kvs, _, err := c.readKeys(octx, op+" (read)", []string{key})
		if err != nil {
			return shard.Config{}, err
		}
		kv := kvs[key]
		if kv == nil {
			return shard.Config{}, shard.NoConfigToRaise()
		}
		stored, err := fleetkeys.ParseConfig(kv.Value)
		if err != nil {
			return shard.Config{}, fmt.Errorf("%w: the fleet's stored config at %q is not a valid config (%v): fix it first", shard.ErrInvalidArgument, key, err)
		}
		next, err := change(stored)
		if err != nil {
			return stored, err
		}
		value, err := json.Marshal(next)
		if err != nil {
			return shard.Config{}, err
		}
		resp, err := c.cli.Txn(octx).If(unchanged(key, kv)).Then(clientv3.OpPut(key, string(value))).Commit()
		if err != nil {
			return shard.Config{}, c.fail(octx, op, err)
		}
		if resp.Succeeded {
			return next, nil
		}
	}
	return shard.Config{}, fmt.Errorf("%w: etcd %s: %q changed under three writes in a row", shard.ErrUnavailable, op, key)
}

// SetFreeze writes P/freeze, or deletes it for a nil mark.
func (f fleet) SetFreeze(ctx context.Context, mark *shard.Mark) error {
	c := f.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if mark != nil && mark.By == "" {
		return fmt.Errorf("%w: freeze mark has an empty by (who froze the fleet)", shard.ErrInvalidArgument)
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	var err error
	if mark == nil {
		_, err = c.cli.Delete(octx, c.keys.Freeze())
	} else {
		value, _ := json.Marshal(mark) // a Mark always marshals
		_, err = c.cli.Put(octx, c.keys.Freeze(), string(value))
	}
	return c.fail(octx, "set freeze", err)
}

// SetPolicy writes P/policy; with ifNone only when none is stored (a
// transaction that writes only a missing key), returning the stored one
// otherwise.
func (f fleet) SetPolicy(ctx context.Context, p shard.BalancePolicy, ifNone bool) (shard.BalancePolicy, error) {
	c := f.c
	if err := ctxErr(ctx); err != nil {
		return shard.BalancePolicy{}, err
	}
	value, err := fleetkeys.PolicyValue(p)
	if err != nil {
		return shard.BalancePolicy{}, err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	key := c.keys.Policy()
	if !ifNone {
		if _, err := c.cli.Put(octx, key, string(value)); err != nil {
			return shard.BalancePolicy{}, c.fail(octx, "set policy", err)
		}
		return p.Clone(), nil
	}
	resp, err := c.cli.Txn(octx).If(unchanged(key, nil)).Then(clientv3.OpPut(key, string(value))).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return shard.BalancePolicy{}, c.fail(octx, "propose policy", err)
	}
	if resp.Succeeded {
		return p.Clone(), nil
	}
	stored, problem := fleetkeys.DecodePolicy(c.pairOf(resp.Responses[0].GetResponseRange().Kvs[0], nil))
	if problem != "" {
		return shard.BalancePolicy{}, fmt.Errorf("%w: %s; set a valid one with `shardctl balance`", shard.ErrInvalidArgument, problem)
	}
	return *stored, nil
}

// Record writes P/history in a transaction with the assignor's compares
// (Assign's).
func (h history) Record(ctx context.Context, id shard.SessionID, epoch shard.Token, value []byte) error {
	c := h.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := shard.CheckHistorySize(value); err != nil {
		return err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	checks, err := c.assignorChecks(octx, id, epoch)
	if err != nil {
		return err
	}
	resp, err := c.cli.Txn(octx).If(checks...).Then(clientv3.OpPut(c.keys.History(), string(value))).Commit()
	if err != nil {
		return c.fail(octx, "record history", err)
	}
	if !resp.Succeeded {
		return c.notAssignor(octx, id, epoch)
	}
	return nil
}

// Read is one read of P/history.
func (h history) Read(ctx context.Context) ([]byte, uint64, error) {
	c := h.c
	if err := ctxErr(ctx); err != nil {
		return nil, 0, err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	kvs, _, err := c.readKeys(octx, "read history", []string{c.keys.History()})
	if err != nil {
		return nil, 0, err
	}
	kv := kvs[c.keys.History()]
	if kv == nil {
		return nil, 0, nil
	}
	return kv.Value, uint64(kv.ModRevision), nil
}

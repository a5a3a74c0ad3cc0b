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

// The config a coordinator runs and how listings compare P/config with it
// are fleetkeys.Decoder's, the same on every engine.

// RaiseGeneration rewrites P/config with Generation gen, with a
// check-and-set on the config it read; the config is read again when the
// write loses to another, a few times.
func (f fleet) RaiseGeneration(ctx context.Context, gen uint32) (shard.Config, error) {
	stored, err := f.c.rewriteConfig(ctx, "raise generation", fleetkeys.RaiseTo(gen))
	if err == nil {
		f.c.keys.NoteGeneration(gen)
	}
	return stored, err
}

// SetLayouts rewrites P/config's layouts from from to to
// (shard.NextLayouts), with a check-and-set on the config it read, and
// runs the config written from then on.
func (f fleet) SetLayouts(ctx context.Context, from, to []shard.Layout) (shard.Config, error) {
	stored, err := f.c.rewriteConfig(ctx, "set layouts", func(stored shard.Config) (shard.Config, error) { return shard.NextLayouts(stored, from, to) })
	if err == nil {
		f.c.keys.Adopt(&fleetkeys.Pair{Key: f.c.keys.Config(), Value: mustJSON(stored)})
	}
	return stored, err
}

// rewriteConfig writes P/config as change makes it from the stored one,
// with a check-and-set on the config read, which is read again when the
// write loses to another, a few times. A fleet with no config, or one
// that is not valid, wraps shard.ErrInvalidArgument; change's error is
// returned as it is, with the stored config.
func (c *Coordinator) rewriteConfig(ctx context.Context, op string, change func(shard.Config) (shard.Config, error)) (shard.Config, error) {
	if err := ctxErr(ctx); err != nil {
		return shard.Config{}, err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	for range 3 {
		kv, _, err := c.kv.Get(octx, c.keys.Config(), consulkv.Query{})
		if err != nil {
			return shard.Config{}, c.fail(octx, op+" (read)", err)
		}
		if kv == nil {
			return shard.Config{}, shard.NoConfigToRaise()
		}
		stored, err := fleetkeys.ParseConfig(kv.Value)
		if err != nil {
			return shard.Config{}, fmt.Errorf("%w: the fleet's stored config at %q is not a valid config (%v): fix it first", shard.ErrInvalidArgument, c.keys.Config(), err)
		}
		next, err := change(stored)
		if err != nil {
			return stored, err
		}
		ok, err := c.kv.CAS(octx, &api.KVPair{Key: c.keys.Config(), Value: mustJSON(next), ModifyIndex: kv.ModifyIndex})
		if err != nil {
			return shard.Config{}, c.fail(octx, op, err)
		}
		if ok {
			return next, nil
		}
	}
	return shard.Config{}, fmt.Errorf("%w: consul %s: %q changed under three writes in a row", shard.ErrUnavailable, op, c.keys.Config())
}

// mustJSON is cfg's stored form (a Config always marshals).
func mustJSON(cfg shard.Config) []byte {
	b, _ := json.Marshal(cfg)
	return b
}

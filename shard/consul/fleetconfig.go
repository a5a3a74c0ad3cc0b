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
	c := f.c
	if err := ctxErr(ctx); err != nil {
		return shard.Config{}, err
	}
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	for range 3 {
		kv, _, err := c.kv.Get(octx, c.keys.Config(), consulkv.Query{})
		if err != nil {
			return shard.Config{}, c.fail(octx, "raise generation (read)", err)
		}
		if kv == nil {
			return shard.Config{}, shard.NoConfigToRaise()
		}
		stored, err := fleetkeys.ParseConfig(kv.Value)
		if err != nil {
			return shard.Config{}, fmt.Errorf("%w: the fleet's stored config at %q is not a valid config (%v): fix it first", shard.ErrInvalidArgument, c.keys.Config(), err)
		}
		if err := shard.CheckRaise(stored.Generation, gen); err != nil {
			return stored, err
		}
		stored.Generation = gen
		value, err := json.Marshal(stored)
		if err != nil {
			return shard.Config{}, err
		}
		ok, err := c.kv.CAS(octx, &api.KVPair{Key: c.keys.Config(), Value: value, ModifyIndex: kv.ModifyIndex})
		if err != nil {
			return shard.Config{}, c.fail(octx, "raise generation", err)
		}
		if ok {
			c.keys.NoteGeneration(gen)
			return stored, nil
		}
	}
	return shard.Config{}, fmt.Errorf("%w: consul raise generation: %q changed under three writes in a row", shard.ErrUnavailable, c.keys.Config())
}

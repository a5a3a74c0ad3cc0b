package consul

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/shard"
)

// A worker's coordinator runs the fleet config Configure settled, for the
// life of the process. P/config is written once, but an operator can
// rewrite or delete it under a running fleet; a coordinator that then took
// its shard set from the next listing would drop the shard keys outside
// the new set, its worker would count its own shards as lost, and every
// later Acquire would name an unknown shard. So the running fleet keeps
// serving the shards it was started with, and the stored config is only
// compared against and reported (Snapshot.Problems); workers that start or
// restart are refused by Configure until P/config is restored. Only a
// coordinator never configured — an operator's view (shardctl, the
// dashboard) — takes the stored config, listing by listing.

// shardSet is a fleet config and its shard IDs, for parsing shard keys.
type shardSet struct {
	cfg shard.Config
	ids map[shard.ID]bool
}

func newShardSet(cfg shard.Config) *shardSet {
	cfg = cfg.Normalize()
	s := &shardSet{cfg: cfg, ids: make(map[shard.ID]bool, cfg.Shards)}
	for _, id := range cfg.IDs() {
		s.ids[id] = true
	}
	return s
}

// setFleet records cfg as the config this coordinator's worker runs.
func (c *Coordinator) setFleet(cfg shard.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fleet == nil || !c.fleet.cfg.SameFleet(cfg) {
		c.fleet = newShardSet(cfg)
	}
}

// fleetShards returns the config Configure settled, or nil before.
func (c *Coordinator) fleetShards() *shardSet {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fleet
}

// storedShards returns the shard set of a stored config, reusing the last
// one built: an unconfigured view reads the same config in every listing.
func (c *Coordinator) storedShards(cfg shard.Config) *shardSet {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stored == nil || !c.stored.cfg.SameFleet(cfg) {
		c.stored = newShardSet(cfg)
	}
	return c.stored
}

// parseConfig reads a P/config value; the error says what is wrong with it.
// A value that names no protocol is this build's (Config.Protocol).
func parseConfig(value []byte) (shard.Config, error) {
	var cfg shard.Config
	if err := json.Unmarshal(value, &cfg); err != nil {
		return shard.Config{}, fmt.Errorf("malformed config value (want JSON shard.Config): %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return shard.Config{}, fmt.Errorf("invalid config: %w", err)
	}
	return cfg.Normalize(), nil
}

// listingShards returns the shard set a listing's shard keys are parsed
// against (nil: no config, every shard key is taken) and what is wrong
// with its P/config, "" if nothing. fleet is the config Configure settled
// (nil if none); stored is the P/config pair of the listing, nil when it
// has none.
func (c *Coordinator) listingShards(fleet *shardSet, stored *api.KVPair) (*shardSet, string) {
	var (
		cfg shard.Config
		bad error
	)
	if stored != nil {
		cfg, bad = parseConfig(stored.Value)
	}
	switch {
	case fleet != nil:
		return fleet, c.drift(stored, cfg, bad, fleet.cfg)
	case stored == nil:
		return nil, ""
	case bad != nil:
		return nil, bad.Error()
	default:
		return c.storedShards(cfg), ""
	}
}

// drift describes how P/config differs from the config this fleet runs,
// naming both and how to restore it; "" when they agree.
func (c *Coordinator) drift(stored *api.KVPair, cfg shard.Config, bad error, runs shard.Config) string {
	runs.Generation = c.seenGen.Load() // the restored config must not lower the fleet's tokens
	value, _ := json.Marshal(runs)     // a Config always marshals
	restore := fmt.Sprintf("restore it (consul kv put %s '%s')", c.configKey(), value)
	switch {
	case stored == nil:
		return fmt.Sprintf("missing; this fleet runs %s: %s — the next worker to start would store its own config there",
			describeConfig(runs), restore)
	case bad != nil:
		return fmt.Sprintf("stored value is not a config (%v) and differs from the one this fleet runs %s: ignored; %s — workers that restart will refuse to start",
			bad, describeConfig(runs), restore)
	case !cfg.SameFleet(runs):
		var protocol string
		if cfg.Protocol != runs.Protocol {
			protocol = fmt.Sprintf(" (written by protocol %d; this fleet runs protocol %d, and a fleet runs one)", cfg.Protocol, runs.Protocol)
		}
		return fmt.Sprintf("stored config %s differs from the one this fleet runs %s%s: ignored; %s — workers that restart will refuse to start",
			describeConfig(cfg), describeConfig(runs), protocol, restore)
	}
	return ""
}

// heldOutside is what an operator's view, which cannot know the config the
// workers run, says when shard keys outside the stored config cfg are
// held: the running fleet uses another config.
func (c *Coordinator) heldOutside(cfg shard.Config, held []shard.ID) string {
	return fmt.Sprintf("%s: %d shard keys outside the stored config %s are held (%s … %s): the running fleet uses another config; if %s was rewritten under it, restore it — its workers keep serving their shards, and workers that restart will refuse to start",
		c.configKey(), len(held), describeConfig(cfg), slices.Min(held), slices.Max(held), c.configKey())
}

func describeConfig(cfg shard.Config) string {
	return fmt.Sprintf("{shards %d, name %q}", cfg.Shards, cfg.Name)
}

// configPair returns the P/config pair of a listing, nil if it has none.
func (c *Coordinator) configPair(pairs api.KVPairs) *api.KVPair {
	for _, kv := range pairs {
		if kv.Key == c.configKey() {
			return kv
		}
	}
	return nil
}

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
		kv, _, err := c.kv.Get(octx, c.configKey(), consulkv.Query{})
		if err != nil {
			return shard.Config{}, c.fail(octx, "raise generation (read)", err)
		}
		if kv == nil {
			return shard.Config{}, shard.NoConfigToRaise()
		}
		stored, err := parseConfig(kv.Value)
		if err != nil {
			return shard.Config{}, fmt.Errorf("%w: the fleet's stored config at %q is not a valid config (%v): fix it first", shard.ErrInvalidArgument, c.configKey(), err)
		}
		if err := shard.CheckRaise(stored.Generation, gen); err != nil {
			return stored, err
		}
		stored.Generation = gen
		value, err := json.Marshal(stored)
		if err != nil {
			return shard.Config{}, err
		}
		ok, err := c.kv.CAS(octx, &api.KVPair{Key: c.configKey(), Value: value, ModifyIndex: kv.ModifyIndex})
		if err != nil {
			return shard.Config{}, c.fail(octx, "raise generation", err)
		}
		if ok {
			c.noteGeneration(gen)
			return stored, nil
		}
	}
	return shard.Config{}, fmt.Errorf("%w: consul raise generation: %q changed under three writes in a row", shard.ErrUnavailable, c.configKey())
}

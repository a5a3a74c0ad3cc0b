package assignor

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// universe is the shard set a step places, from one snapshot's config:
// the fleet's shards less, during a reshard, the parents closed and the
// children not open yet. A closed parent is never given out again; a
// child waits for its parents (docs/design.md, "Resharding").
type universe struct {
	cfg     shard.Config
	ids     []shard.ID        // sorted
	in      map[shard.ID]bool // ids, for a resharded config only (nil otherwise)
	closing map[shard.ID]bool // the open parents of the reshard in progress
	layouts int               // len(cfg.Layouts), for the cache
	open    []shard.ID        // the progress it was built from (cache key)
	from    *shard.Config     // the config it was built from (cache key)
}

// universeOf returns the shard set a step on snap places; fallback is the
// config when snap has none. It is kept between steps while the config
// and the reshard's progress stay the same.
func (a *Assignor) universeOf(snap shard.Snapshot, fallback shard.Config) *universe {
	cfg := fallback
	if snap.Config != nil {
		cfg = *snap.Config
	}
	rp, _ := snap.Reshard()
	if u := a.universe; u != nil && u.from.Same(cfg) && slices.Equal(u.open, rp.Open) {
		return u
	}
	a.universe = newUniverse(snap, cfg)
	return a.universe
}

// newUniverse is the shard set a step on snap places under cfg (snap's
// own, or the assignor's when snap has none).
func newUniverse(snap shard.Snapshot, cfg shard.Config) *universe {
	rp, resharding := snap.Reshard()
	u := &universe{cfg: cfg, from: &cfg, open: rp.Open}
	if len(cfg.Layouts) == 0 {
		u.ids = cfg.IDs()
		return u
	}
	out := map[shard.ID]bool{}
	if resharding {
		for _, id := range slices.Concat(rp.Closed, rp.Openable, rp.Waiting) {
			out[id] = true
		}
		u.closing = map[shard.ID]bool{}
		for _, id := range rp.Open {
			u.closing[id] = true
		}
	}
	u.in = map[shard.ID]bool{}
	for _, id := range cfg.IDs() {
		if !out[id] {
			u.ids = append(u.ids, id)
			u.in[id] = true
		}
	}
	return u
}

// filter drops from st's keys and memories the shards outside u (a
// parent closed since the key was written, a shard of a retired layout),
// which the step would refuse, and returns the workers whose keys it
// changed: their keys are written again (askClose).
func (u *universe) filter(st *rebalance.State) map[string]bool {
	if u.in == nil {
		return nil
	}
	keep := func(ids []shard.ID) []shard.ID {
		return slices.DeleteFunc(slices.Clone(ids), func(id shard.ID) bool { return !u.in[id] })
	}
	changed := map[string]bool{}
	for w, a := range st.Assigned {
		n := len(a.Shards)
		a.Shards, a.Free, a.Standby = keep(a.Shards), keep(a.Free), keep(a.Standby)
		maps.DeleteFunc(a.Arrived, func(id shard.ID, _ time.Time) bool { return !u.in[id] })
		maps.DeleteFunc(a.Preparing, func(id shard.ID, _ time.Time) bool { return !u.in[id] })
		if len(a.Shards) != n {
			changed[w] = true
		}
		st.Assigned[w] = a
	}
	return changed
}

// closingOf is the shards of ids to close: the open parents among them.
func (u *universe) closingOf(ids []shard.ID) []shard.ID {
	var out []shard.ID
	for _, id := range ids {
		if u.closing[id] {
			out = append(out, id)
		}
	}
	return out
}

// askClose adds to d the key of every live worker that the step leaves
// as it is but which must be written again: it lists a shard outside u
// (changed), or the parents it is to close differ from what it says (a
// reshard started, or was cancelled). The key is rewritten as askLoads
// rewrites one: its shards and memory as they are, its free shards as of
// this listing.
func askClose(snap shard.Snapshot, st rebalance.State, d rebalance.Decision, u *universe, changed map[string]bool) rebalance.Decision {
	var held map[shard.ID]bool
	for _, m := range st.Members {
		k, keyed := snap.Assignments[m.ID]
		if _, written := d.Assign[m.ID]; !keyed || written {
			continue
		}
		a := st.Assigned[m.ID]
		if !changed[m.ID] && slices.Equal(k.Close, u.closingOf(a.Shards)) {
			continue
		}
		if held == nil {
			held = heldShards(st)
		}
		a.Free = nil
		for _, id := range a.Shards {
			if !held[id] {
				a.Free = append(a.Free, id)
			}
		}
		if d.Assign == nil {
			d.Assign = map[string]rebalance.Assignment{}
		}
		d.Assign[m.ID] = a
	}
	return d
}

// openChildren opens the children of the reshard in progress whose
// parents are all closed (and ends the reshard once every child is open),
// in one write of the config checked against the layouts read. The next
// listing shows them, and the step places them as free shards. A config
// rewritten meanwhile is not an error: the next listing decides again.
func (a *Assignor) openChildren(ctx context.Context, cfg shard.Config, ids []shard.ID, log *zap.Logger) error {
	to := cfg.Opening(ids)
	_, err := a.cfg.Coordinator.Fleet().SetLayouts(ctx, cfg.Layouts, to)
	switch {
	case errors.Is(err, shard.ErrConfigChanged):
		log.Info("the fleet's config changed before children could be opened; deciding again", zap.Error(err))
		return nil
	case err != nil:
		return err
	}
	a.m.opened.Add(float64(len(ids)))
	log.Info("opened children of the reshard: their parents are all closed", zap.Int("children", len(ids)),
		zap.String("first", string(ids[0])), zap.Bool("done", to[len(to)-1].Done))
	return nil
}

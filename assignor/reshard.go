package assignor

import (
	"context"
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
func (a *Assignor) universeOf(snap shard.Snapshot, fallback shard.Config, wave int) *universe {
	cfg := fallback
	if snap.Config != nil {
		cfg = *snap.Config
	}
	if u := a.universe; u != nil && u.from.Same(cfg) && !cfg.Resharding() {
		return u
	}
	a.universe = newUniverse(snap, cfg, wave)
	return a.universe
}

// newUniverse is the shard set a step on snap places under cfg (snap's
// own, or the assignor's when snap has none), with at most wave parents
// closing at once (at least one).
func newUniverse(snap shard.Snapshot, cfg shard.Config, wave int) *universe {
	rp, resharding := snap.Reshard()
	u := &universe{cfg: cfg, from: &cfg}
	if len(cfg.Layouts) == 0 {
		u.ids = cfg.IDs()
		return u
	}
	out := map[shard.ID]bool{}
	if resharding {
		for _, id := range slices.Concat(rp.Closed, rp.Openable, rp.Waiting) {
			out[id] = true
		}
		// The wave, and every parent already asked (Assignment.Close): a
		// wave that shrinks (a worker less, a smaller budget) withdraws no
		// ask, so a handler running to its end is not stopped halfway.
		u.closing = map[shard.ID]bool{}
		for _, id := range slices.Concat(closingWave(cfg, rp.Open, wave), rp.Closing) {
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

// closingWave is the open parents to close now: the first wave of them
// (at least one) in an order that closes the parents of one child
// together (by their first child's index, then their own), so that a
// merge's children open wave by wave too. The rest of the fleet keeps
// running meanwhile: a reshard pauses at most a move budget of key ranges
// at a time.
func closingWave(cfg shard.Config, open []shard.ID, wave int) []shard.ID {
	wave = max(wave, 1)
	if len(open) <= wave {
		return open
	}
	segs := cfg.Segments()
	type key struct{ child, parent int }
	keys := make(map[shard.ID]key, len(open))
	for _, id := range open {
		p, _ := segs[0].Index(id)
		first := -1
		if cs := cfg.ChildrenOf(id); len(cs) > 0 {
			first, _ = segs[1].Index(cs[0])
		}
		keys[id] = key{first, p}
	}
	ordered := slices.Clone(open)
	slices.SortFunc(ordered, func(a, b shard.ID) int {
		ka, kb := keys[a], keys[b]
		if ka.child != kb.child {
			return ka.child - kb.child
		}
		return ka.parent - kb.parent
	})
	return ordered[:wave]
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
// this listing (rewriteKeys).
func askClose(snap shard.Snapshot, st rebalance.State, d rebalance.Decision, u *universe, changed map[string]bool) rebalance.Decision {
	return rewriteKeys(snap, st, d, func(id string, k shard.Assignment, a rebalance.Assignment) bool {
		return changed[id] || !slices.Equal(k.Close, u.closingOf(a.Shards))
	})
}

// openChildren opens the children of the reshard in progress whose
// parents are all closed (and ends the reshard once every child is open),
// in one write of the config checked against the layouts read. The next
// listing shows them, and the step places them as free shards. A config
// rewritten meanwhile (shard.ErrConfigChanged) fails the write: the caller
// steps as usual, and the next listing decides again.
func (a *Assignor) openChildren(ctx context.Context, cfg shard.Config, ids []shard.ID, log *zap.Logger) error {
	to := cfg.Opening(ids)
	if _, err := a.cfg.Coordinator.Fleet().SetLayouts(ctx, cfg.Layouts, to); err != nil {
		return err
	}
	a.m.opened.Add(float64(len(ids)))
	log.Info("opened children of the reshard: their parents are all closed", zap.Int("children", len(ids)),
		zap.String("first", string(ids[0])))
	return nil
}

// childrenRunning reports whether every child of the reshard rp is open and held
// by a live member of snap: the reshard may end.
func childrenRunning(snap shard.Snapshot, rp shard.ReshardProgress) bool {
	if len(rp.Waiting)+len(rp.Openable) > 0 {
		return false
	}
	live := map[shard.SessionID]bool{}
	for _, m := range snap.Members {
		if m.Live() {
			live[m.Session] = true
		}
	}
	for _, id := range rp.Opened {
		if st, _ := snap.Shard(id); !st.Held() || !live[st.Session] {
			return false
		}
	}
	return true
}

// endReshard marks the reshard in progress done, in one write of the
// config checked against the layouts read: its parents are retired, and
// the fleet balances again.
func (a *Assignor) endReshard(ctx context.Context, cfg shard.Config, log *zap.Logger) error {
	l, _ := cfg.Reshard()
	if _, err := a.cfg.Coordinator.Fleet().SetLayouts(ctx, cfg.Layouts, cfg.Ending()); err != nil {
		return err
	}
	log.Info("reshard done: every child open and running", zap.Int("shards", l.Shards), zap.String("name", l.Name))
	return nil
}

package worker

import (
	"sync"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// loadState is the worker's part in load balancing: the meters of the
// shards it runs, what it last wrote to its loads key, and, as the
// assignor, the last load seen for each shard.
type loadState struct {
	meters meters

	mu sync.Mutex
	// written is the loads this worker last wrote to its loads key, and
	// the session it wrote them with (another session's key is not shown
	// as this worker's Load, so it counts as nothing written).
	written        map[shard.ID]float64
	writtenSession shard.SessionID
	writtenAt      time.Time
	// seen is, on the assignor, each shard's load as last read from its
	// holder's loads (Member.Load in a snapshot): a shard that just moved keeps its figure
	// until the new holder has measured it, instead of counting as the
	// mean (a hot shard would otherwise look average right after a move,
	// inviting a move back).
	seen map[shard.ID]float64
}

// stepLoads is the assignor's per-shard load for rebalance.State.Loads,
// from the members' loads in snap (Member.Load); nil while the fleet balances shard
// counts (Config.LoadBalance nil).
//
// A shard's load is its holder's figure (Member.Load), or the last one
// seen from an earlier holder, times its static weight (Config.ShardWeight,
// 1 without one). A shard with no figure is left out, so it counts as the
// mean of the others. While no shard has a figure the loads are the
// weights alone, all 1 without ShardWeight: count balance, as without
// load awareness.
func (w *Worker) stepLoads(snap shard.Snapshot) map[shard.ID]float64 {
	if w.cfg.LoadBalance == nil {
		return nil
	}
	ls := &w.load
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.seen == nil {
		ls.seen = map[shard.ID]float64{}
	}
	for id, v := range snap.ShardLoads() { // live holders' figures only
		if validLoad(v) {
			ls.seen[id] = v
		}
	}
	loads := make(map[shard.ID]float64, len(w.shards))
	for _, id := range w.shards {
		weight := w.shardWeight(id)
		switch v, ok := ls.seen[id]; {
		case ok:
			loads[id] = v * weight
		case len(ls.seen) == 0:
			loads[id] = weight
		}
	}
	w.m.load.observeFleet(snap, loads)
	return loads
}

// shardWeight is the static weight of id: Config.ShardWeight's, or 1.
// New has checked that it is finite and ≥ 0 for every shard of the fleet.
func (w *Worker) shardWeight(id shard.ID) float64 {
	if w.cfg.ShardWeight == nil {
		return 1
	}
	return w.cfg.ShardWeight(id)
}

// validLoad reports whether a load read from a snapshot may be used: a
// loads key (or older member key) edited by hand may hold anything JSON can.
func validLoad(v float64) bool { return v >= 0 && v <= maxLoad }

// maxLoad bounds a usable load figure; anything larger in a loads key
// is treated as unreadable rather than allowed to swamp every other shard.
const maxLoad = 1e15

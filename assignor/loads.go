package assignor

import (
	"sync"

	"github.com/shardlease/shardlease/shard"
)

// maxLoad bounds a usable load figure; anything larger in a loads key is
// treated as unreadable rather than allowed to swamp every other shard.
const maxLoad = 1e15

// validLoad reports whether a load read from a snapshot may be used: a
// loads key edited by hand may hold anything JSON can.
func validLoad(v float64) bool { return v >= 0 && v <= maxLoad }

// loads is the assignor's per-shard load for rebalance.State.Loads. A
// shard's load is its holder's figure (Member.Load), or the last one seen
// from an earlier holder — a shard that just moved keeps its figure until
// the new holder has measured it, instead of counting as the mean (a hot
// shard would otherwise look average right after a move, inviting a move
// back) — times its static weight (1 without ShardWeight). A shard with no
// figure is left out, so it counts as the mean of the others. While no
// shard has a figure the loads are the weights alone: count balance, as
// without load awareness.
type loads struct {
	mu     sync.Mutex
	seen   map[shard.ID]float64
	weight func(shard.ID) float64
}

// forget drops every figure seen.
func (l *loads) forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = nil
}

// of returns every shard's load from snap's loads keys.
func (l *loads) of(snap shard.Snapshot, shards []shard.ID) map[shard.ID]float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[shard.ID]float64{}
	}
	for id, v := range snap.ShardLoads() { // live holders' figures only
		if validLoad(v) {
			l.seen[id] = v
		}
	}
	out := make(map[shard.ID]float64, len(shards))
	for _, id := range shards {
		w := 1.0
		if l.weight != nil {
			w = l.weight(id)
		}
		switch v, ok := l.seen[id]; {
		case ok:
			out[id] = v * w
		case len(l.seen) == 0:
			out[id] = w
		}
	}
	return out
}

// spread is the lowest and highest load per unit of capacity among the
// live members with capacity (weight, none while draining), each divided
// by the fleet's mean: 1 and 1 for a fleet in perfect balance. A held
// shard without a figure counts as the mean of those with one. ok is false
// when no member has capacity or nothing has load.
func spread(snap shard.Snapshot, loads map[shard.ID]float64) (lo, hi float64, ok bool) {
	mean, n := 0.0, 0
	for _, v := range loads {
		mean += v
		n++
	}
	if n == 0 {
		return 0, 0, false
	}
	mean /= float64(n)
	load := map[string]float64{}
	for id, w := range snap.Owners() {
		if v, ok := loads[id]; ok {
			load[w] += v
		} else {
			load[w] += mean
		}
	}
	total, capacity := 0.0, 0
	ratios := map[string]float64{}
	for _, m := range snap.Members {
		if !m.Live() || m.Draining || m.Weight <= 0 {
			continue
		}
		total += load[m.ID]
		capacity += m.Weight
		ratios[m.ID] = load[m.ID] / float64(m.Weight)
	}
	if capacity == 0 || total == 0 {
		return 0, 0, false
	}
	perCapacity := total / float64(capacity)
	first := true
	for _, r := range ratios {
		r /= perCapacity
		if first {
			lo, hi, first = r, r, false
		}
		lo, hi = min(lo, r), max(hi, r)
	}
	return lo, hi, true
}

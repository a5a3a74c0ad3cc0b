package procfleet

import (
	"slices"

	"github.com/shardlease/shardlease/shard"
)

// View is one observation of a fleet: who owns what, and who counts.
type View struct {
	Index   uint64            // the KV index it was read at
	Owners  map[string]string // shard → owning worker, held shards only
	Members []string          // workers that count for balance (live ones)
}

// BlockingIndex is the view's index, so that shard.Follow follows a
// fleet's views.
func (v View) BlockingIndex() uint64 { return v.Index }

// SnapshotView is a shardlease snapshot as a view: its held shards' owners
// and its live members.
func SnapshotView(snap shard.Snapshot) View {
	v := View{Index: snap.Index, Owners: map[string]string{}}
	for s, w := range snap.Owners() {
		v.Owners[string(s)] = w
	}
	for _, m := range snap.Members {
		if m.Live() {
			v.Members = append(v.Members, m.ID)
		}
	}
	return v
}

// Counts returns the shards each member owns (zero included).
func (v View) Counts() map[string]int {
	c := make(map[string]int, len(v.Members))
	for _, m := range v.Members {
		c[m] = 0
	}
	for _, w := range v.Owners {
		if _, ok := c[w]; ok {
			c[w]++
		}
	}
	return c
}

// Spread is max−min of the members' counts.
func (v View) Spread() int {
	c := v.Counts()
	if len(c) == 0 {
		return 0
	}
	ns := make([]int, 0, len(c))
	for _, n := range c {
		ns = append(ns, n)
	}
	return slices.Max(ns) - slices.Min(ns)
}

// OwnedByMembers counts the shards held by a member.
func (v View) OwnedByMembers() int {
	c := 0
	for _, n := range v.Counts() {
		c += n
	}
	return c
}

// ShardsOf lists the shards worker id owns, sorted.
func (v View) ShardsOf(id string) []string {
	var out []string
	for s, w := range v.Owners {
		if w == id {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// Moved counts the shards whose owner differs between two views.
func Moved(before, after View) int {
	n := 0
	for s, w := range after.Owners {
		if before.Owners[s] != w {
			n++
		}
	}
	return n
}

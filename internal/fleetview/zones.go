package fleetview

import (
	"cmp"
	"slices"
)

// Zone is one zone of the fleet's live workers: how many shards its
// workers own against the share its capacity gives it, as the assignor
// splits the shards (by the sum of the weights of its workers not
// draining).
type Zone struct {
	// Name is the zone; "" for the workers with none.
	Name    string `json:"name"`
	Workers int    `json:"workers"`
	// Capacity is the sum of the weights of its live workers not
	// draining (a weight ≤ 0 counts as 1).
	Capacity int `json:"capacity"`
	Shards   int `json:"shards"`
	// Share is Capacity's share of the fleet's shards: the zone's quota
	// is this, rounded down or up.
	Share float64 `json:"share"`
}

// zones sums the live workers by zone, sorted by name; none when no live
// worker has a zone.
func zones(ws []Worker, shards int) []Zone {
	if !slices.ContainsFunc(ws, func(w Worker) bool { return w.Live() && w.Zone != "" }) {
		return nil
	}
	by := map[string]*Zone{}
	total := 0
	for _, w := range ws {
		if !w.Live() {
			continue
		}
		z := by[w.Zone]
		if z == nil {
			z = &Zone{Name: w.Zone}
			by[w.Zone] = z
		}
		z.Workers++
		z.Shards += w.Shards
		if !w.Draining {
			z.Capacity += max(w.Weight, 1)
			total += max(w.Weight, 1)
		}
	}
	out := make([]Zone, 0, len(by))
	for _, z := range by {
		if total > 0 {
			z.Share = float64(shards) * float64(z.Capacity) / float64(total)
		}
		out = append(out, *z)
	}
	slices.SortFunc(out, func(a, b Zone) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

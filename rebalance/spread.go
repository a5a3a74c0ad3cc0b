package rebalance

import (
	"maps"
	"slices"
)

// Spread returns max − min over the counts, 0 for an empty map: the
// imbalance of an assignment (at most 1 when members of equal weight hold
// their quotas).
func Spread(counts map[string]int) int {
	if len(counts) == 0 {
		return 0
	}
	vs := slices.Collect(maps.Values(counts))
	return slices.Max(vs) - slices.Min(vs)
}

package rebalance

import "testing"

func TestSpread(t *testing.T) {
	for _, tt := range []struct {
		counts map[string]int
		want   int
	}{
		{nil, 0},
		{map[string]int{"a": 7}, 0},
		{map[string]int{"a": 3, "b": 5, "c": 4}, 2},
		{map[string]int{"a": 0, "b": 2}, 2},
	} {
		if got := Spread(tt.counts); got != tt.want {
			t.Errorf("Spread(%v) = %d, want %d", tt.counts, got, tt.want)
		}
	}
}

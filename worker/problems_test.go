package worker

import (
	"slices"
	"testing"
)

func TestSeenProblemsReportsEachKeyOnceWhileItStays(t *testing.T) {
	var seen seenProblems
	steps := []struct {
		problems, want []string
	}{
		{[]string{"a", "b"}, []string{"a", "b"}},
		{[]string{"a", "b"}, nil},                // unchanged: nothing new
		{[]string{"b", "c", "c"}, []string{"c"}}, // c is new, once
		{nil, nil},                               // all gone
		{[]string{"a"}, []string{"a"}},           // back again: reported again
	}
	for i, st := range steps {
		if got := seen.fresh(st.problems); !slices.Equal(got, st.want) {
			t.Errorf("step %d: fresh(%q) = %q, want %q", i, st.problems, got, st.want)
		}
	}
}

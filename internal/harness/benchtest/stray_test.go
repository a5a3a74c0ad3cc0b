package benchtest

import (
	"strings"
	"testing"
)

// TestStrayNumbersAreCaught: the number check accepts a section rendered
// from its run, and names a number from elsewhere (an older run's 12,500)
// and a figure rounded differently from the run's (2.21 for 2.202).
func TestStrayNumbersAreCaught(t *testing.T) {
	rep := SampleReport()
	section := rep.DocSection("bench/run.json", "img/ownership.svg")
	if stray := StrayNumbers(section, rep); len(stray) > 0 {
		t.Fatalf("a rendered section has numbers the check does not find in its run: %v\n%s", stray, section)
	}
	for _, tc := range []struct{ add, want string }{
		{"The 64+64 transaction did 12,500 ops/s.", "12,500"},
		{"Failover took 2.21 s.", "2.21"},
	} {
		if stray := StrayNumbers(section+tc.add, rep); !equalStrings(stray, []string{tc.want}) {
			t.Errorf("section + %q: stray numbers %v, want [%s]", tc.add, stray, tc.want)
		}
	}
	if stray := StrayNumbers(section+"Failover took 2.20 s, 2,202 ms.", rep); len(stray) > 0 {
		t.Errorf("a figure of the run as rounded in print was refused: %v", stray)
	}
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}

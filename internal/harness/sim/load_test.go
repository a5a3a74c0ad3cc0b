package sim

import (
	"reflect"
	"testing"
	"time"
)

// TestLoadSetups: about a third of the seeds balance load, each seed's
// load setup is the same every time, and a seed's loads change until the
// faults end and then hold still.
func TestLoadSetups(t *testing.T) {
	on := 0
	for seed := uint64(1); seed <= 300; seed++ {
		s := NewSchedule(seed)
		if again := NewSchedule(seed); !reflect.DeepEqual(s.Setup.Load, again.Setup.Load) {
			t.Fatalf("seed %d: two load setups: %v and %v", seed, s.Setup.Load, again.Setup.Load)
		}
		l := s.Setup.Load
		if !l.On {
			continue
		}
		on++
		if len(l.Base) != s.Setup.Shards || l.Freeze != s.FaultsEnd {
			t.Fatalf("seed %d: %d base loads for %d shards, frozen at %v with faults ending at %v", seed, len(l.Base), s.Setup.Shards, l.Freeze, s.FaultsEnd)
		}
		for i := range l.Base {
			if a, b := l.at(seed, i, l.Freeze), l.at(seed, i, l.Freeze+time.Hour); a != b || a <= 0 {
				t.Fatalf("seed %d shard %d: load %v at the freeze and %v an hour later, want equal and positive", seed, i, a, b)
			}
		}
		if l.HotAt > 0 && l.Noise == 0 {
			if before, after := l.at(seed, l.Hot, l.HotAt-time.Millisecond), l.at(seed, l.Hot, l.HotAt); after != 3*before {
				t.Fatalf("seed %d: the hot shard %d goes from %v to %v at %v, want tripled", seed, l.Hot, before, after, l.HotAt)
			}
		}
	}
	if on < 70 || on > 130 {
		t.Fatalf("%d of 300 seeds balance load, want about 100", on)
	}
}

package sim

import (
	"fmt"
	"testing"
	"time"
)

// assignorSeeds show each fault aimed at the assignor at work, checked by what the
// run counted as well as by its invariants. A seed replays its faults but
// not its goroutine interleaving (see the package doc), so each may take a
// few tries to show what it is kept for.
var assignorSeeds = []struct {
	seed uint64
	name string
	what string
	saw  func(Schedule, Result) bool
}{
	{134, "two-candidates", "the assignor crashes and is restarted; w8 joins as P/assignor leaves its lock-delay: two candidates campaign at once", contestedAfterCrash},
	{147, "two-candidates", "the assignor crashes; the candidates left campaign at once when its lock-delay ends", contestedAfterCrash},
	{70, "paused-write", "the assignor (w1) freezes with an Assign of 3 keys in hand for 16.9 s (TTL 10 s) and sends it on waking: refused, ErrNotAssignor",
		func(_ Schedule, r Result) bool { return r.HeldRefused > 0 }},
	{22, "stale-assignment", "w1 is served its assignment late, an older answer replayed after each new one, and the fleet still settles",
		func(_ Schedule, r Result) bool { return r.StaleServed > 0 }},
}

// contestedAfterCrash: an election was contested between an assignor
// crash followed by a joining worker and the end of the joining window
// plus a lock-delay.
func contestedAfterCrash(s Schedule, r Result) bool {
	p := s.Setup.Policy
	for _, e := range s.Events {
		if e.Kind != Crash || !e.Assignor {
			continue
		}
		end := e.At + p.TTL + p.EffectiveLockDelay()*9/4 + time.Second
		for _, c := range r.Contested {
			if e.At <= c && c <= end {
				return true
			}
		}
	}
	return false
}

func TestSimAssignorFaults(t *testing.T) {
	for _, a := range assignorSeeds {
		t.Run(fmt.Sprintf("seed=%d/%s", a.seed, a.name), func(t *testing.T) {
			t.Parallel()
			for range 5 {
				res := runSeed(t, a.seed, nil)
				if t.Failed() || a.saw(res.Schedule, res) {
					return
				}
			}
			t.Errorf("seed %d did not show, in 5 runs: %s\nreplay: %s", a.seed, a.what, replay(a.seed))
		})
	}
}

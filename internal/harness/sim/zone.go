package sim

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// addZoneOutage lays a zone-wide crash over a schedule with zones, from a
// random stream of its own (every event seeds had before stays where it
// was): in half of those seeds, after every other fault, every running
// worker of one zone crashes at the same instant, and all of them start
// again under their IDs after the lease's failover time and up to 5 s
// more. The survivors must take the zone's shards; once it is back, the
// settle check wants the zones in proportion again. The outage needs a
// worker running outside the zone; FaultsEnd moves to the restarts.
func (s *Schedule) addZoneOutage() {
	if s.Setup.Zones == 0 {
		return
	}
	rng := rand.New(rand.NewPCG(s.Seed, s.Seed^0x20e0_0a7a_9e5e_ed00))
	if rng.IntN(2) == 0 {
		return
	}
	draw := betweenIn(rng)
	between := func(lo, hi time.Duration) time.Duration { return draw(lo, hi).Round(time.Millisecond) }
	p := s.Setup.Policy
	at := s.FaultsEnd + between(time.Second, 5*time.Second)
	zone := s.Setup.ZoneOf(fmt.Sprintf("w%d", rng.IntN(s.Setup.Zones))) // w0 … are in zone-0 …
	order, running := s.membership(s.Events, at)
	var hit []string
	others := 0
	for _, id := range order {
		switch {
		case !running[id]:
		case s.Setup.ZoneOf(id) == zone:
			hit = append(hit, id)
		default:
			others++
		}
	}
	if len(hit) == 0 || others == 0 {
		return
	}
	back := at + p.TTL + p.EffectiveLockDelay() + between(0, 5*time.Second)
	for _, id := range hit {
		s.Events = append(s.Events, Event{At: at, Kind: Crash, Worker: id})
	}
	for _, id := range hit {
		s.Events = append(s.Events, Event{At: back, Kind: Restart, Worker: id})
	}
	s.FaultsEnd, s.ZoneOutage = back, zone
}

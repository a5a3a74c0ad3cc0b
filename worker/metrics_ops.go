package worker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardlease/shardlease/shard"
)

// opsMetrics are the operators' states as the assignor last listed them:
// set on the worker that holds the role and 0 on the others, like
// imbalance_shards, so a fleet-wide max() reads the fleet.
type opsMetrics struct {
	frozen    prometheus.Gauge
	cordoned  prometheus.Gauge
	returning prometheus.Gauge
	inFlight  prometheus.Gauge
}

func newOpsMetrics(gauge func(name, help string) prometheus.Gauge) opsMetrics {
	return opsMetrics{
		frozen:    gauge("fleet_frozen", "1 while the fleet is frozen (shardctl freeze: no rebalancing moves, only failover), as the assignor last saw it (0 on other workers)."),
		cordoned:  gauge("members_cordoned", "Live workers cordoned by an operator (keep what they hold, given nothing new), as the assignor last saw them (0 on other workers)."),
		returning: gauge("members_returning", "Workers inside their rejoin grace, their shards reserved for them, as the assignor last saw them (0 on other workers)."),
		inFlight:  gauge("moves_in_flight", "Hand-offs in flight (held by a live worker whose assignment no longer lists them), against MaxMovesInFlight, as the assignor last saw them (0 on other workers)."),
	}
}

func (o opsMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{o.frozen, o.cordoned, o.returning, o.inFlight}
}

// observe sets the gauges from the assignor's listing at now.
func (o opsMetrics) observe(snap shard.Snapshot, now time.Time) {
	frozen, cordoned, returning, inFlight := 0, 0, 0, 0
	if snap.Freeze != nil {
		frozen = 1
	}
	live := map[shard.SessionID]string{}
	for _, m := range snap.Members {
		if m.Live() {
			live[m.Session] = m.ID
			if m.Cordon != nil {
				cordoned++
			}
		}
		if m.Returning(now) {
			returning++
		}
	}
	type listing struct {
		worker string
		shard  shard.ID
	}
	listed := map[listing]bool{}
	for w, a := range snap.Assignments {
		for _, id := range a.Shards {
			listed[listing{w, id}] = true
		}
	}
	for _, st := range snap.Shards {
		w, ok := live[st.Session]
		if !ok || !st.Held() {
			continue
		}
		if _, keyed := snap.Assignments[w]; keyed && !listed[listing{w, st.Shard}] {
			inFlight++
		}
	}
	o.frozen.Set(float64(frozen))
	o.cordoned.Set(float64(cordoned))
	o.returning.Set(float64(returning))
	o.inFlight.Set(float64(inFlight))
}

// reset zeroes the gauges when the worker stops being the assignor.
func (o opsMetrics) reset() {
	for _, g := range []prometheus.Gauge{o.frozen, o.cordoned, o.returning, o.inFlight} {
		g.Set(0)
	}
}

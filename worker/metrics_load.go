package worker

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardlease/shardlease/shard"
)

// loadMetrics are the worker's load gauges: its own shards' smoothed load
// (on every worker), and, on the assignor, the spread of load per unit of
// capacity across the fleet as it last balanced it (0 on the others, like
// imbalance_shards).
type loadMetrics struct {
	load          prometheus.Gauge
	perCapacity   prometheus.Gauge
	measured      prometheus.Gauge
	writes        prometheus.Counter
	writesSkipped prometheus.Counter
	rejected      prometheus.Counter
	fleetMax      prometheus.Gauge
	fleetMin      prometheus.Gauge
}

func newLoadMetrics(gauge func(name, help string) prometheus.Gauge, counter func(name, help string) prometheus.Counter) loadMetrics {
	return loadMetrics{
		load: gauge("load", "Sum of the smoothed loads of the shards this worker runs (as reported by their handlers, or their commit rate), "+
			"sampled every load report interval; 0 on a worker that does not carry loads."),
		perCapacity: gauge("load_per_capacity", "This worker's load divided by its capacity (its member weight)."),
		measured:    gauge("load_shards_measured", "Shards this worker runs that have a load figure (reported, or derived from commits)."),
		writes:      counter("load_writes_total", "Writes of this worker's loads key (P/loads/<worker>) with its shards' loads."),
		writesSkipped: counter("load_writes_skipped_total",
			"Load report ticks that wrote nothing because neither the worker's total load nor any shard's changed by more than 5 % of the total."),
		rejected: counter("load_reports_rejected_total", "Claim.ReportLoad calls ignored because the load was negative, NaN or infinite."),
		fleetMax: gauge("fleet_load_max_ratio",
			"Highest load per unit of capacity among live workers, divided by the fleet's mean, as the load-balancing assignor last saw it (0 on other workers)."),
		fleetMin: gauge("fleet_load_min_ratio",
			"Lowest load per unit of capacity among live workers, divided by the fleet's mean, as the load-balancing assignor last saw it (0 on other workers)."),
	}
}

func (l loadMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{l.load, l.perCapacity, l.measured, l.writes, l.writesSkipped, l.rejected, l.fleetMax, l.fleetMin}
}

// observeOwn sets the worker's own gauges from its sampled loads.
func (l loadMetrics) observeOwn(loads map[shard.ID]float64, capacity int) {
	sum := 0.0
	for _, v := range loads {
		sum += v
	}
	l.load.Set(sum)
	l.measured.Set(float64(len(loads)))
	if capacity > 0 {
		l.perCapacity.Set(sum / float64(capacity))
	}
}

// observeFleet sets the fleet gauges from the assignor's listing and the
// loads it balances (a shard without a figure counts as the mean).
func (l loadMetrics) observeFleet(snap shard.Snapshot, loads map[shard.ID]float64) {
	lo, hi, ok := shard.LoadSpread(snap, loads)
	if !ok {
		lo, hi = 0, 0
	}
	l.fleetMax.Set(hi)
	l.fleetMin.Set(lo)
}

// reset zeroes the fleet gauges on a worker that is not the assignor (at
// its next load report after it stopped being the assignor).
func (l loadMetrics) reset() {
	l.fleetMax.Set(0)
	l.fleetMin.Set(0)
}

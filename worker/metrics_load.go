package worker

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardlease/shardlease/shard"
)

// loadMetrics are the worker's load gauges: its own shards' smoothed load
// (the fleet's spread is the assignor's to export).
type loadMetrics struct {
	load          prometheus.Gauge
	perCapacity   prometheus.Gauge
	measured      prometheus.Gauge
	writes        prometheus.Counter
	writesSkipped prometheus.Counter
	rejected      prometheus.Counter
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
	}
}

func (l loadMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{l.load, l.perCapacity, l.measured, l.writes, l.writesSkipped, l.rejected}
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

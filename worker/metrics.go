package worker

import (
	"errors"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardlease/shardlease/shard"
)

// metrics are one worker's Prometheus collectors, labelled worker=<id> so
// that many workers can share one registerer (as the demo does).
type metrics struct {
	shardsOwned     prometheus.Gauge
	standbys        prometheus.Gauge
	acquisitions    *prometheus.CounterVec // reason: initial, orphaned, rebalanced, takeover
	releases        *prometheus.CounterVec // reason: rebalance, drain, shutdown, fence_rejected
	losses          *prometheus.CounterVec // reason: step_down, taken, fence_rejected, drain_timeout
	renewSeconds    prometheus.Histogram
	renewFailures   prometheus.Counter
	stepDowns       prometheus.Counter
	commits         *prometheus.CounterVec // result: accepted, stale, lost, error
	watchWakeups    prometheus.Counter
	moves           prometheus.Counter
	pauseSeconds    prometheus.Histogram
	handlerRestarts prometheus.Counter
	historyBehind   prometheus.Counter
	load            loadMetrics
}

// buildInfo is shardlease_build_info: 1, labelled with the release the
// worker shows (Config.Version), the protocol it speaks and its protocol
// steps (comma-separated), so that a dashboard sees a mixed fleet in one
// query.
func buildInfo(worker, version string, steps []string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "shardlease", Name: "build_info",
		Help: "1, labelled with the worker's release (its Config.Version), the protocol it speaks and its protocol steps.",
		ConstLabels: prometheus.Labels{"worker": worker, "version": version, "protocol": strconv.Itoa(shard.Protocol),
			"steps": strings.Join(steps, ",")}})
	g.Set(1)
	return g
}

// memberInfo is shardlease_member_info: 1, labelled with the worker's
// zone (empty: none), so that dashboards and alerts group workers by zone.
func memberInfo(worker, zone string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "shardlease", Name: "member_info",
		Help:        "1, labelled with the worker's zone (worker.Config.Zone; empty: none).",
		ConstLabels: prometheus.Labels{"worker": worker, "zone": zone}})
	g.Set(1)
	return g
}

func newMetrics(worker, version, zone string, steps []string, reg prometheus.Registerer) (*metrics, error) {
	labels := prometheus.Labels{"worker": worker}
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "shardlease", Name: name, Help: help, ConstLabels: labels}
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts(opts(name, help)))
	}
	counterVec := func(name, help, label string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts(opts(name, help)), []string{label})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts(opts(name, help)))
	}
	m := &metrics{
		shardsOwned:   gauge("shards_owned", "Shards this worker owns (handler running or draining)."),
		standbys:      gauge("standbys", "Shards this worker runs a standby for (the handler's standby side, without the lock)."),
		acquisitions:  counterVec("acquisitions_total", "Shard acquisitions by why the assignor gave the shard (shard.Reason).", "reason"),
		releases:      counterVec("releases_total", "Voluntary shard releases by reason (shard.Reason).", "reason"),
		losses:        counterVec("losses_total", "Shards lost without a hand-off, by reason.", "reason"),
		renewFailures: counter("renewal_failures_total", "Session renewals that failed."),
		stepDowns:     counter("step_downs_total", "Times the worker stepped down (lost its session or missed its local deadline)."),
		commits:       counterVec("commits_total", "Offset commits by result (accepted, stale, lost: refused by the worker itself after its authority ended, error).", "result"),
		watchWakeups:  counter("watch_wakeups_total", "Changes of this worker's assignment key it reconciled."),
		moves:         counter("rebalance_moves_total", "Shards this worker handed off because its assignment no longer lists them."),
		renewSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "shardlease", Name: "renewal_duration_seconds",
			Help: "Latency of session renewals.", ConstLabels: labels,
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}}),
		pauseSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "shardlease", Name: "pause_seconds",
			Help: "Measured scheduler lag of the worker process (GC pauses, CPU starvation).", ConstLabels: labels,
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}),
		handlerRestarts: counter("handler_restarts_total", "Handler restarts after it returned while the shard was owned."),
		historyBehind: counter("history_behind_total", "New claims whose fence the offsets store refused while the claim still held its lock at its token: "+
			"the store's floors come from a coordinator history this coordinator lost (rebuilt, or restored from an older snapshot)."),
		load: newLoadMetrics(gauge, counter),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range append([]prometheus.Collector{buildInfo(worker, version, steps), memberInfo(worker, zone), m.shardsOwned, m.standbys, m.acquisitions, m.releases, m.losses, m.renewSeconds,
		m.renewFailures, m.stepDowns, m.commits, m.watchWakeups, m.moves, m.pauseSeconds, m.handlerRestarts, m.historyBehind}, m.load.collectors()...) {
		if err := reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if errors.As(err, &already) {
				return nil, errors.Join(ErrInvalidConfig, err)
			}
			return nil, err
		}
	}
	return m, nil
}

package assignor

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardlease/shardlease/shard"
)

// ErrMetrics: the assignor's metrics could not be registered (another
// collector of the same worker is registered already).
var ErrMetrics = errors.New("assignor: registering metrics")

// metrics are the assignor's Prometheus collectors, labelled worker=<id>
// like the worker's own. Every gauge is set on the worker that holds the
// role and 0 on the others, so a fleet-wide max() reads the fleet.
type metrics struct {
	leading      prometheus.Gauge
	epoch        prometheus.Gauge
	steps        prometheus.Counter
	stepSeconds  prometheus.Histogram
	written      prometheus.Counter
	moves        *prometheus.CounterVec
	imbalance    prometheus.Gauge
	problems     prometheus.Gauge
	frozen       prometheus.Gauge
	cordoned     prometheus.Gauge
	returning    prometheus.Gauge
	inFlight     prometheus.Gauge
	loadMax      prometheus.Gauge
	loadMin      prometheus.Gauge
	unplaceable  prometheus.Gauge
	preparing    prometheus.Gauge
	cold         prometheus.Counter
	opened       prometheus.Counter
	closing      prometheus.Gauge
	resetOnLeave []prometheus.Gauge
}

func newMetrics(worker string, reg prometheus.Registerer) (*metrics, error) {
	labels := prometheus.Labels{"worker": worker}
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "shardlease", Name: name, Help: help, ConstLabels: labels}
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts(opts(name, help)))
	}
	m := &metrics{
		leading: gauge("assignor", "1 while this worker is the fleet's assignor."),
		epoch:   gauge("assignor_epoch", "The epoch of this worker's latest term as the fleet's assignor."),
		steps:   prometheus.NewCounter(prometheus.CounterOpts(opts("assignor_steps_total", "Steps the assignor took (one per listing of the fleet or wake-up)."))),
		stepSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "shardlease", Name: "assignor_step_seconds",
			Help: "Time the assignor spent deciding one step (rebalance.Step, without I/O).", ConstLabels: labels,
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25}}),
		written: prometheus.NewCounter(prometheus.CounterOpts(opts("assignments_written_total", "Assignment keys the assignor wrote or deleted."))),
		moves: prometheus.NewCounterVec(prometheus.CounterOpts(opts("assignor_moves_total",
			"Shards the assignor moved, by reason (shard.Reason: free, orphaned, stuck, rebalance, drain, load).")), []string{"reason"}),
		imbalance: gauge("imbalance_shards", "Max minus min shards held across live workers, as the assignor last saw it (0 on other workers)."),
		problems: gauge("coordinator_problems", "Problems the coordinator reports under the fleet prefix in the latest snapshot "+
			"(foreign or malformed keys, keys edited by hand, a stored config that differs from the one the fleet runs)."),
		frozen:    gauge("fleet_frozen", "1 while the fleet is frozen (shardctl freeze: no rebalancing moves, only failover), as the assignor last saw it (0 on other workers)."),
		cordoned:  gauge("members_cordoned", "Live workers cordoned by an operator (keep what they hold, given nothing new), as the assignor last saw them (0 on other workers)."),
		returning: gauge("members_returning", "Workers inside their rejoin grace, their shards reserved for them, as the assignor last saw them (0 on other workers)."),
		inFlight:  gauge("moves_in_flight", "Hand-offs in flight (held by a live worker whose assignment no longer lists them), against MaxMovesInFlight, as the assignor last saw them (0 on other workers)."),
		loadMax: gauge("fleet_load_max_ratio",
			"Highest load per unit of capacity among live workers, divided by the fleet's mean, as the load-balancing assignor last saw it (0 on other workers)."),
		loadMin: gauge("fleet_load_min_ratio",
			"Lowest load per unit of capacity among live workers, divided by the fleet's mean, as the load-balancing assignor last saw it (0 on other workers)."),
		unplaceable: gauge("shards_unplaceable",
			"Shards the placement rules let no live worker be given (a pin no live worker's labels match, or whose only matches are cordoned or stuck), as the assignor last decided (0 on other workers)."),
		preparing: gauge("moves_preparing",
			"Warm moves waiting for their target's standby to be ready (the holder keeps the shard meanwhile), as the assignor last decided (0 on other workers)."),
		cold: prometheus.NewCounter(prometheus.CounterOpts(opts("moves_cold_total",
			"Warm moves the assignor made cold: their target's standby was not ready within the prepare timeout."))),
		opened: prometheus.NewCounter(prometheus.CounterOpts(opts("reshard_children_opened_total",
			"Children of a reshard the assignor opened: their parents were all closed."))),
		closing: gauge("reshard_parents_open",
			"Parents of the reshard in progress not closed yet, as the assignor last saw them (0 on other workers, and when no reshard runs)."),
	}
	m.resetOnLeave = []prometheus.Gauge{m.leading, m.imbalance, m.problems, m.frozen, m.cordoned, m.returning, m.inFlight, m.loadMax, m.loadMin, m.unplaceable, m.preparing, m.closing}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.leading, m.epoch, m.steps, m.stepSeconds, m.written, m.moves, m.imbalance, m.problems,
		m.frozen, m.cordoned, m.returning, m.inFlight, m.loadMax, m.loadMin, m.unplaceable, m.preparing, m.cold, m.opened, m.closing} {
		if err := reg.Register(c); err != nil {
			return nil, errors.Join(ErrMetrics, err)
		}
	}
	return m, nil
}

// left zeroes the gauges when this worker stops being the assignor.
func (m *metrics) left() {
	for _, g := range m.resetOnLeave {
		g.Set(0)
	}
}

// observe sets the operators' gauges from the listing at now.
func (m *metrics) observe(snap shard.Snapshot, now time.Time) {
	m.problems.Set(float64(len(snap.Problems)))
	rp, _ := snap.Reshard()
	m.closing.Set(float64(len(rp.Open)))
	frozen, cordoned, returning, inFlight := 0, 0, 0, 0
	if snap.Freeze != nil {
		frozen = 1
	}
	for _, mem := range snap.Members {
		if mem.Live() && mem.Cordon != nil {
			cordoned++
		}
		if mem.Returning(now) {
			returning++
		}
	}
	for w, ids := range heldBy(snap) {
		a, keyed := snap.Assignments[w]
		if !keyed {
			continue
		}
		listed := make(map[shard.ID]bool, len(a.Shards))
		for _, id := range a.Shards {
			listed[id] = true
		}
		for _, id := range ids {
			if !listed[id] {
				inFlight++
			}
		}
	}
	m.frozen.Set(float64(frozen))
	m.cordoned.Set(float64(cordoned))
	m.returning.Set(float64(returning))
	m.inFlight.Set(float64(inFlight))
}

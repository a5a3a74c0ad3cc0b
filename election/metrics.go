package election

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are one instance's Prometheus collectors, labelled with the
// election and the instance, so that many share one registerer.
type metrics struct {
	leader        prometheus.Gauge
	renewSeconds  prometheus.Histogram
	renewFailures prometheus.Counter
}

func newMetrics(election, instance string, reg prometheus.Registerer) (*metrics, error) {
	labels := prometheus.Labels{"election": election, "instance": instance}
	m := &metrics{
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "shardlease", Subsystem: "election", Name: "leader",
			Help: "1 while this instance holds the election's lock (its term), 0 otherwise.", ConstLabels: labels}),
		renewSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "shardlease", Subsystem: "election",
			Name: "renewal_duration_seconds", Help: "Latency of session renewals.", ConstLabels: labels,
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}}),
		renewFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "shardlease", Subsystem: "election",
			Name: "renewal_failures_total", Help: "Session renewals that failed.", ConstLabels: labels}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.leader, m.renewSeconds, m.renewFailures} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// renewed records one renewal of the session (lease.Config.Renewed).
func (m *metrics) renewed(took time.Duration, err error) {
	m.renewSeconds.Observe(took.Seconds())
	if err != nil {
		m.renewFailures.Inc()
	}
}

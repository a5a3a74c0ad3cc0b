// Package prometheus holds shardlease's alerting rules
// (shardlease-alerts.yml) and, in a module of its own so that the
// library's go.mod never needs Prometheus's server code, the test that
// parses them with Prometheus's own rule and PromQL parsers, as promtool
// check rules does, and holds every metric they use to one a worker
// exports.
package prometheus

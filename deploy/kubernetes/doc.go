// Package kubernetes holds shardlease's Kubernetes manifests
// (shardd-worker.yaml, shardd-run.yaml) and, in a module of its own so
// that the library's go.mod never needs the Kubernetes API, the test that
// decodes them strictly into the Kubernetes API types and holds them to
// what shardd needs: a stable worker ID per pod, the node's Consul agent,
// a readiness probe on /readyz, a termination grace period that covers
// the drain, one pod at a time out (rolls and voluntary disruptions), and
// a command line that a shardd built from this tree accepts.
package kubernetes

// Package deploy holds shardlease's deployment kit: systemd units
// (deploy/systemd) and Kubernetes manifests (deploy/kubernetes, a module
// of its own with its own test) for `shardd worker` and `shardd run`, and
// Prometheus alerting rules (deploy/prometheus, likewise). It has no code;
// its test checks every unit with systemd's own verifier
// (systemd-analyze verify, with the shardd built from this tree), runs the
// unit's command line against that shardd to prove it parses, and holds
// each unit's stop timeout above the drain it asks shardd for.
package deploy

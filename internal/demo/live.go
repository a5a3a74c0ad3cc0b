package demo

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// ErrNoSuchWorker: Live.Crash named a worker that is not running.
var ErrNoSuchWorker = errors.New("demo: no such live worker")

// Live is a running demo as Options.OnStart sees it: enough to serve a
// dashboard and to inject a crash from it.
type Live struct {
	// Name names the fleet for a page title: "embedded demo", or the
	// Consul backend's address and prefix.
	Name string
	// Fleet is the demo's shard set.
	Fleet shard.Config
	// Coordinator is the embedded coordinator every worker uses.
	Coordinator shard.Coordinator
	// Offsets is the demo's offset store (read it; do not commit).
	Offsets offsets.Store
	// Registry holds every worker's metrics.
	Registry *prometheus.Registry
	// Head returns the synthetic stream's newest offset (the same for every
	// shard), for lag.
	Head func() int64
	// Crash crashes a live worker, as the schedule's crash does: its
	// session is abandoned with its shards, which move only when the
	// session expires. It wraps ErrNoSuchWorker for an unknown or already
	// crashed worker.
	Crash func(worker string) error
}

func (d *demo) handles() Live {
	name := "embedded demo"
	if desc := d.backend.Describe(); !strings.HasPrefix(desc, "the embedded") {
		name = "demo on " + desc
	}
	return Live{
		Name:        name,
		Fleet:       shard.Config{Shards: d.o.Shards}.Normalize(),
		Coordinator: d.coord,
		Offsets:     d.store,
		Registry:    d.reg,
		Head:        d.head,
		Crash:       d.crashByID,
	}
}

// crashByID is Live.Crash: the fault is recorded like a scheduled one.
func (d *demo) crashByID(id string) error {
	m := d.fleet.Member(id)
	if m == nil || m.Crashed() {
		var live []string
		for _, l := range d.fleet.Running() {
			live = append(live, l.ID)
		}
		return fmt.Errorf("%w: %q (live: %v)", ErrNoSuchWorker, id, live)
	}
	what := d.crash(m) + " (requested)"
	d.mu.Lock()
	d.faults = append(d.faults, what)
	d.mu.Unlock()
	d.say("fault: %s", what)
	return nil
}

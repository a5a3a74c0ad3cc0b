package demo

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardlease/shardlease/internal/inproc"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/bolt"
	"github.com/shardlease/shardlease/shard"
)

type demo struct {
	o       Options
	backend Backend
	coord   shard.Coordinator // the fleet as the demo reads it
	store   *inproc.Auditor
	reg     *prometheus.Registry
	rng     *rand.Rand
	start   time.Time
	out     io.Writer
	outMu   sync.Mutex // say is called from the handlers too (violations)

	fleet inproc.Fleet[struct{}]

	mu     sync.Mutex
	faults []string
	next   int // number of the next worker to spawn
}

// Run plays the demo until o.Duration passes (or ctx ends), printing
// progress to progress, and returns the summary. The error is non-nil when
// the demo could not run or an invariant failed; the summary says which.
func Run(ctx context.Context, o Options, progress io.Writer) (Summary, error) {
	if err := o.Validate(); err != nil {
		return Summary{}, err
	}
	o = o.withDefaults()
	if o.Seed == 0 {
		o.Seed = rand.Uint64()%1_000_000 + 1
	}
	store, cleanup, err := openStore(o)
	if err != nil {
		return Summary{}, err
	}
	defer cleanup()
	// Tokens must stay above every token the store has seen, or a restart
	// on a kept data dir would find all its commits refused as stale.
	floor, err := highestFloor(ctx, store, shard.Config{Shards: o.Shards}.IDs())
	if err != nil {
		return Summary{}, err
	}
	backend := o.backend()
	coord, err := backend.Open(ctx, floor)
	if err != nil {
		return Summary{}, err
	}
	defer backend.Close() // deferred after cleanup: runs before the store closes
	d := &demo{
		o:       o,
		backend: backend,
		coord:   coord,
		reg:     o.Registry,
		rng:     rand.New(rand.NewPCG(o.Seed, o.Seed>>1|1)),
		start:   cmp.Or(o.Start, time.Now()),
		out:     progress,
	}
	// Every broken invariant is said as it happens, with what broke it:
	// the summary counts them, and a count alone cannot be investigated.
	d.store = inproc.NewAuditor(store, inproc.AuditOptions{Violation: func(msg string) { d.say("INVARIANT BROKEN: %s", msg) }})
	if d.reg == nil {
		d.reg = prometheus.NewRegistry()
	}
	d.say("demo: %d workers over %d shards, lease ttl %v renew %v pause budget %v, lock-delay %v, seed %d",
		o.Workers, o.Shards, o.Policy.TTL, o.Policy.RenewEvery, o.Policy.PauseBudget, o.Policy.EffectiveLockDelay(), o.Seed)
	d.say("coordinator: %s", backend.Describe())
	for range o.Workers {
		if err := d.spawn(d.nextID()); err != nil {
			d.fleet.StopAll()
			return Summary{}, err
		}
	}
	if o.OnStart != nil {
		o.OnStart(d.handles())
	}
	d.play(ctx)
	settled := d.settle(context.WithoutCancel(ctx)) // after Ctrl-C too: judge a settled fleet
	sum := d.summarize(settled)
	d.fleet.StopAll()
	sum.finishAudit(d.store.Counts())
	return sum, sum.Err()
}

func (d *demo) nextID() string {
	d.next++
	return fmt.Sprintf("w%02d", d.next)
}

// say prints a progress line stamped with the time since the start.
func (d *demo) say(format string, args ...any) {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	fmt.Fprintf(d.out, "[%6.1fs] %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}

func openStore(o Options) (offsets.Store, func(), error) {
	if o.Store != nil {
		return o.Store, func() {}, nil
	}
	dir, remove := o.DataDir, false
	if dir == "" {
		tmp, err := os.MkdirTemp("", "shardd-demo-")
		if err != nil {
			return nil, nil, fmt.Errorf("demo: creating a temp data dir: %w", err)
		}
		dir, remove = tmp, true
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("demo: --data %q: %w", dir, err)
	}
	st, err := bolt.Open(filepath.Join(dir, "offsets.db"))
	if err != nil {
		return nil, nil, fmt.Errorf("demo: --data %q: %w", dir, err)
	}
	return st, func() {
		st.Close()
		if remove {
			os.RemoveAll(dir)
		}
	}, nil
}

func highestFloor(ctx context.Context, st offsets.Store, ids []shard.ID) (shard.Token, error) {
	var hi shard.Token
	for _, id := range ids {
		cp, err := st.Load(ctx, id)
		if err != nil {
			return 0, fmt.Errorf("demo: reading offsets of %s: %w", id, err)
		}
		hi = max(hi, cp.Floor)
	}
	return hi, nil
}

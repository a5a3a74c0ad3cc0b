package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/logging"
	"github.com/shardlease/shardlease/internal/offsetlog"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/bolt"
	offconsul "github.com/shardlease/shardlease/offsets/consul"
	offetcd "github.com/shardlease/shardlease/offsets/etcd"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/worker"
)

// workerFlags is what `shardd worker` reads from its command line.
type workerFlags struct {
	memberFlags
	address     string
	offsets     string
	localOK     bool // --allow-local-offsets
	history     string
	dataDir     string
	rate        int
	commitEvery time.Duration
	restore     time.Duration
	standby     bool // --standby: with --restore, a standby side
}

// Offset store kinds of --offsets, besides a postgres:// URL.
const (
	offsetsConsul = "consul" // P/offsets/ in the fleet's Consul: shared, the default on Consul
	offsetsEtcd   = "etcd"   // P/offsets/ in the fleet's etcd: shared, the default with --etcd
	offsetsMemory = "memory" // this process only
	offsetsBolt   = "bolt"   // a file this process only opens
)

// isPostgresDSN: --offsets names a PostgreSQL database.
func isPostgresDSN(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

func workerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseWorkerFlags(args, stderr)
	if !ok {
		return code
	}
	return runMember(ctx, f.member(), stderr)
}

func parseWorkerFlags(args []string, stderr io.Writer) (workerFlags, int, bool) {
	fs := flag.NewFlagSet("shardd worker", flag.ContinueOnError)
	var f workerFlags
	f.register(fs,
		"the fleet's Consul KV prefix, e.g. shardlease/orders (required)",
		"this worker's ID, unique among live workers",
		"how long a revoked shard waits for its handler before it is released")
	fs.IntVar(&f.weight, "weight", 1, "relative share of shards")
	fs.StringVar(&f.address, "address", "", "address shown to operators (default: the bound --http address)")
	fs.StringVar(&f.offsets, "offsets", "", `offset store: "consul" (under the fleet's prefix, P/offsets/; the default on Consul), "etcd" (the same in etcd; the default with --etcd), a postgres:// URL (table shardlease_offsets; for large fleets), or, with --allow-local-offsets, "memory" or "bolt" (a file in --data), which this process alone sees`)
	fs.BoolVar(&f.localOK, "allow-local-offsets", false, `accept --offsets memory or bolt: offsets only this process sees, so a shard's next owner in another process starts from offset 0 (benchmarks, demos)`)
	fs.StringVar(&f.history, "history", "", "append a JSON line for every call and return of the offset store, and for every start, commit attempt and end of a shard handler, to this file (for the chaos suite's checkers)")
	fs.StringVar(&f.dataDir, "data", "", "directory of the bolt offsets file (one worker process per directory)")
	fs.IntVar(&f.rate, "rate", 50, "messages per second per shard in the synthetic stream")
	fs.DurationVar(&f.commitEvery, "commit-every", time.Second, "how often a shard handler commits its offset (jittered)")
	fs.DurationVar(&f.restore, "restore", 0, "how long a shard's state takes to rebuild: a handler started cold waits this long before processing, and the worker runs standbys that build it ahead (warm moves); 0: a stateless stream, no standbys")
	fs.BoolVar(&f.standby, "standby", true, "with --restore, run standbys (warm moves, standbys for failover); --standby=false restores on every start, as a stateful handler without a standby side does")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardd worker --prefix P --shards N [--id ID] [flags]

Runs one worker of a fleet on Consul, or on etcd with --etcd. Each owned shard consumes a synthetic
stream and commits its offset with the claim's fencing token. SIGTERM or
SIGINT drains: handlers commit and return, every shard is released and the
session destroyed, so other workers take over at once.

Consul connection settings come from the environment as for the consul CLI
(CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN, CONSUL_CACERT, CONSUL_CLIENT_CERT,
CONSUL_CLIENT_KEY, CONSUL_HTTP_SSL, …); etcd's, as for etcdctl (ETCDCTL_CACERT,
ETCDCTL_CERT, ETCDCTL_KEY, ETCDCTL_USER, …; not ETCDCTL_ENDPOINTS: only
--etcd moves a worker to etcd). A flag overrides its variable.
Logs are JSON on stderr.

`)
		fs.PrintDefaults()
	}
	if ok, code := parse(fs, args, stderr); !ok {
		return f, code, false
	}
	f.engine = onConsul
	if len(f.etcd.Endpoints) > 0 {
		f.engine = onEtcd
	}
	if f.offsets == "" {
		f.offsets = map[engine]string{onConsul: offsetsConsul, onEtcd: offsetsEtcd}[f.engine]
	}
	f.resolvePolicy(fs)
	if err := f.validate(); err != nil {
		fmt.Fprintf(stderr, "shardd worker: %v\n", err)
		return f, exitBadInvoke, false
	}
	return f, exitOK, true
}

// validate reports every problem at once: the shared flags' (check) and
// those of the flags only `shardd worker` has, which only it can judge.
func (f workerFlags) validate() error {
	var required, own []error
	add := func(format string, args ...any) { own = append(own, fmt.Errorf(format, args...)) }
	if f.consul.Prefix == "" {
		required = append(required, errors.New("--prefix is required: the fleet's KV prefix, e.g. shardlease/orders"))
	}
	switch f.offsets {
	case offsetsConsul, offsetsEtcd:
		if on := map[string]engine{offsetsConsul: onConsul, offsetsEtcd: onEtcd}[f.offsets]; on != f.engine {
			add("--offsets %s keeps offsets in %s, but this worker runs on %s: use --offsets %s (the default) or a postgres:// URL", f.offsets, on, f.engine,
				map[engine]string{onConsul: offsetsConsul, onEtcd: offsetsEtcd}[f.engine])
		}
	case offsetsMemory, offsetsBolt:
		if f.offsets == offsetsBolt && f.dataDir == "" {
			add("--offsets bolt needs --data DIR")
		}
		if !f.localOK {
			add("--offsets %s keeps offsets in this process only: a shard's next owner in another worker process would start from offset 0 and the fence would not stop this one; "+
				"use --offsets consul (the default) or a postgres:// URL, or pass --allow-local-offsets if losing them is acceptable", f.offsets)
		}
	default:
		if !isPostgresDSN(f.offsets) {
			add("--offsets %q: want %q, %q, a postgres:// URL, or %q or %q with --allow-local-offsets", f.offsets, offsetsConsul, offsetsEtcd, offsetsMemory, offsetsBolt)
		}
	}
	if f.rate < 1 {
		add("--rate %d: want at least 1 message per second", f.rate)
	}
	if f.commitEvery <= 0 {
		add("--commit-every %v must be positive", f.commitEvery)
	}
	if f.restore < 0 || f.restore > time.Hour {
		add("--restore %v: want 0 (stateless) up to 1h", f.restore)
	}
	if !f.standby && f.restore == 0 {
		add("--standby=false applies to a stream with state: pass --restore D too, or drop --standby=false (a stateless stream has no standbys)")
	}
	return f.check(required, own)
}

// member is the fleet member `shardd worker` runs: its handler consumes a
// synthetic stream per shard.
func (f workerFlags) member() member {
	return member{
		name: "shardd worker", flags: f.memberFlags, address: f.address, localOffsets: f.localOK,
		newLog:    logging.JSON,
		openStore: f.openStore,
		newHandler: func(store offsets.Store, log *zap.Logger) (worker.Handler, error) {
			history, _ := store.(*offsetlog.Store) // nil without --history
			s := stream{rate: f.rate, commitEvery: f.commitEvery, log: log, history: history}
			switch r := (restoringStream{stream: s, restore: f.restore}); {
			case f.restore > 0 && f.standby:
				return statefulStream{r}, nil
			case f.restore > 0:
				return r, nil
			}
			return s, nil
		},
		logFields: []zap.Field{zap.String("offsets", postgres.RedactDSN(f.offsets))},
	}
}

// openStore opens the --offsets store, recording its calls to --history
// when set.
func (f workerFlags) openStore(ctx context.Context, log *zap.Logger) (offsets.Store, func(), error) {
	st, err := f.openOffsets(ctx)
	if err != nil {
		return nil, nil, err
	}
	if f.offsets == offsetsMemory {
		log.Warn("offsets are kept in memory: lost on exit and not shared with other workers, so the fence protects this process only")
	}
	if f.history == "" {
		return st, func() { st.Close() }, nil
	}
	out, err := offsetlog.OpenFile(f.history)
	if err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("--history: %w", err)
	}
	return offsetlog.New(st, out, f.id), func() { st.Close(); out.Close() }, nil
}

func (f workerFlags) openOffsets(ctx context.Context) (offsets.Store, error) {
	switch {
	case f.offsets == offsetsConsul:
		st, err := offconsul.New(offconsul.Config{Connection: f.consul.Connection(), Prefix: f.consul.Prefix})
		if err != nil {
			return nil, fmt.Errorf("--offsets consul: %w", err)
		}
		return st, nil
	case f.offsets == offsetsEtcd:
		cli, err := f.etcd.Dial(nil)
		if err != nil {
			return nil, fmt.Errorf("--offsets etcd: %w", err)
		}
		st, err := offetcd.New(offetcd.Config{Client: cli, Prefix: f.consul.Prefix})
		if err != nil {
			cli.Close()
			return nil, fmt.Errorf("--offsets etcd: %w", err)
		}
		return withClient{st, cli}, nil
	case f.offsets == offsetsMemory:
		return offmem.New(), nil
	case isPostgresDSN(f.offsets):
		octx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		// A vanished owner's FencedTx is ended by the server about one
		// step-down deadline after it went silent (PostgreSQL's settings
		// count whole seconds, hence the floor), so the next owner's fence
		// does not wait for TCP keepalives.
		hold := min(max(f.policy.StepDownAfter(), postgres.MinMaxHold), postgres.MaxMaxHold)
		st, err := postgres.Open(octx, postgres.Config{DSN: f.offsets, MaxHold: hold})
		if err != nil {
			return nil, fmt.Errorf("--offsets %s: %w", postgres.RedactDSN(f.offsets), err)
		}
		return st, nil
	}
	if err := os.MkdirAll(f.dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("--data %q: %w", f.dataDir, err)
	}
	st, err := bolt.Open(filepath.Join(f.dataDir, "offsets.db"))
	if err != nil {
		return nil, fmt.Errorf("--data %q: %w", f.dataDir, err)
	}
	return st, nil
}

// withClient is an offsets/etcd store that closes its own client.
type withClient struct {
	*offetcd.Store
	cli io.Closer
}

func (s withClient) Close() error {
	err := s.Store.Close()
	s.cli.Close()
	return err
}

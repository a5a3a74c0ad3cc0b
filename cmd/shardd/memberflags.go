package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/shard/etcd"
	"github.com/shardlease/shardlease/worker"
)

// engine is the coordinator a member runs on.
type engine int

const (
	embedded engine = iota // shard/memory: this process is the whole fleet
	onConsul               // shard/consul
	onEtcd                 // shard/etcd, with --etcd
)

func (e engine) String() string {
	return [...]string{"the embedded coordinator", "Consul", "etcd"}[e]
}

// memberFlags are the flags shared by the commands that run one member of a
// fleet (`shardd worker`, `shardd run`): where the fleet is, who this
// member is, its lease, and how it is observed.
type memberFlags struct {
	engine    engine
	consul    consul.Config
	etcd      etcd.Connection
	consulSet []string // the --consul… flags given, which etcd has no use for
	etcdSet   []string // the --etcd… flags given, which need --etcd
	fleet     shard.Config
	id        string
	weight    int // --weight, `shardd worker` only; 0: the default, 1
	zone      string
	labels    map[string]string
	envLabel  error // SHARDLEASE_LABELS could not be read (and --labels was not given)
	policy    shard.LeasePolicy
	drain     time.Duration
	rejoin    time.Duration // --rejoin-grace; 0: none
	stopDrain time.Duration // --drain-before-stop; 0: none
	moves     int           // --max-moves-in-flight; 0: the library's default
	load      loadFlags
	httpAddr  string
	level     string
}

// register adds the shared flags to fs, with the defaults; prefixHelp,
// idHelp and drainHelp say what --prefix, --id and --drain-timeout mean
// for this command.
func (f *memberFlags) register(fs *flag.FlagSet, prefixHelp, idHelp, drainHelp string) {
	f.consul, f.policy = consul.DefaultConfig(), shard.DefaultPolicy
	f.consul.RegisterFlags(fs)
	f.etcd = etcd.ConnectionFromEnv(os.Getenv)
	f.etcd.RegisterFlags(fs)
	host, _ := os.Hostname()
	fs.StringVar(&f.consul.Prefix, "prefix", "", prefixHelp)
	fs.IntVar(&f.fleet.Shards, "shards", 0, "number of shards in the fleet (required; must match the fleet's stored config)")
	fs.StringVar(&f.fleet.Name, "shard-name", shard.DefaultName, "shard name stem: shards are named STEM-000, STEM-001, …")
	fs.StringVar(&f.id, "id", host, idHelp)
	fs.StringVar(&f.zone, "zone", os.Getenv("SHARDLEASE_ZONE"), "the failure domain this member runs in, e.g. eu-west-1a: the assignor keeps each zone's share of shards "+
		"in proportion to its capacity (env SHARDLEASE_ZONE; default: none)")
	if f.labels, f.envLabel = shard.ParseLabels(os.Getenv("SHARDLEASE_LABELS")); f.envLabel != nil {
		f.envLabel = fmt.Errorf("SHARDLEASE_LABELS: %w (fix it, or give --labels)", f.envLabel)
	}
	fs.Func("labels", "this member's labels as key=value,… e.g. disk=ssd,rack=r7, shown to operators (env SHARDLEASE_LABELS)", func(v string) error {
		l, err := shard.ParseLabels(v)
		if err != nil {
			return err
		}
		f.labels, f.envLabel = l, nil
		return nil
	})
	fs.DurationVar(&f.policy.TTL, "ttl", f.policy.TTL, "session TTL (liveness check: the check's TTL; liveness ttl: at least 10s, "+
		"and the lease flags left out come from shard.SessionTTLPolicy, 10s/2s/5s)")
	fs.DurationVar(&f.policy.RenewEvery, "renew", f.policy.RenewEvery, "renewal interval")
	fs.DurationVar(&f.policy.PauseBudget, "pause-budget", f.policy.PauseBudget, "pause budget (2×renew + pause must fit in ttl)")
	f.policy.LockDelay = 0 // zero unless given: resolvePolicy
	addLockDelayFlag(fs, &f.policy.LockDelay)
	fs.DurationVar(&f.drain, "drain-timeout", worker.DefaultDrainTimeout, drainHelp+" (0: the default, "+worker.DefaultDrainTimeout.String()+")")
	fs.DurationVar(&f.rejoin, "rejoin-grace", 0, "on SIGTERM, ask the assignor to keep this member's shards, idle, for its return under the same --id within this long, "+
		"instead of handing them off at once (a restart without moves; default 0: hand off)")
	fs.DurationVar(&f.stopDrain, "drain-before-stop", 0, "on SIGTERM, first drain for at most this long: keep processing while the assignor moves this member's shards away in waves of the move budget, "+
		"warm where the new owners run standbys, then stop (a rolling restart without a rejoin grace that does not start shards cold; default 0: release at once)")
	fs.IntVar(&f.moves, "max-moves-in-flight", 0, "the most hand-offs in flight across the fleet, proposed as the fleet's balance policy when it stores none (shardctl balance changes the fleet's) "+
		"(default 0: rebalance.DefaultMaxMovesInFlight, max(16, ⌈shards/members⌉))")
	f.load.register(fs)
	fs.StringVar(&f.httpAddr, "http", "", "serve Prometheus /metrics and /status on this address, e.g. :9100 (default: off)")
	fs.StringVar(&f.level, "log-level", "info", "log level: debug, info, warn, error")
}

// resolvePolicy settles the lease policy after parsing fs. With none of
// --ttl, --renew, --pause-budget or --lock-delay given it is
// shard.DefaultPolicy, or shard.SessionTTLPolicy with --consul-liveness
// ttl (Consul refuses session TTLs under 10 s). Given any of them, those
// not given come from that policy, except the lock-delay: unset, it is
// the given policy's default, the ttl, so that --ttl alone keeps the
// second rule whatever the ttl.
func (f *memberFlags) resolvePolicy(fs *flag.FlagSet) {
	parsed := f.policy
	f.policy = shard.DefaultPolicy
	if f.engine == onConsul && f.consul.Liveness == consul.LivenessTTL {
		f.policy = shard.SessionTTLPolicy
	}
	fs.Visit(func(fl *flag.Flag) {
		switch {
		case strings.HasPrefix(fl.Name, "consul"):
			f.consulSet = append(f.consulSet, "--"+fl.Name)
		case strings.HasPrefix(fl.Name, "etcd-"):
			f.etcdSet = append(f.etcdSet, "--"+fl.Name)
		}
		switch fl.Name {
		case "ttl":
			f.policy.TTL = parsed.TTL
		case "renew":
			f.policy.RenewEvery = parsed.RenewEvery
		case "pause-budget":
			f.policy.PauseBudget = parsed.PauseBudget
		case "lock-delay":
		default:
			return
		}
		f.policy.LockDelay = parsed.LockDelay // zero unless --lock-delay was given
	})
}

// settings is the worker.Config the flags describe, without what is
// opened at start (coordinator, offset store, handler, metrics, logger).
func (f memberFlags) settings() worker.Config {
	c := worker.Config{ID: f.id, Weight: f.weight, Zone: f.zone, Labels: f.labels, Fleet: f.fleet, Policy: f.policy, DrainTimeout: f.drain,
		RejoinGrace: f.rejoin, DrainBeforeStop: f.stopDrain, MaxMovesInFlight: f.moves}
	f.load.apply(&c)
	return c
}

// check reports every problem with the command line at once. First the
// problems only the command can know: flags that must be given (its own
// in required, then --shards and --id) and the values of its own flags
// (own); while a flag is missing the libraries are not asked, since they
// would only restate it. Then what the
// libraries say of the values: the worker's settings and, on Consul, its
// connection settings; once the settings are valid, the session the
// policy asks of Consul and libs (the command's own, e.g. the handler's
// config), which would otherwise name a bad policy or fleet twice. The
// command maps none of them to flags: each names its value.
func (f memberFlags) check(required, own []error, libs ...func() error) error {
	missing := required
	if f.fleet.Shards == 0 {
		missing = append(missing, errors.New("--shards is required: the number of shards in the fleet"))
	}
	if f.id == "" {
		missing = append(missing, errors.New("--id is required (the host name is unknown)"))
	}
	if len(missing) > 0 {
		return errors.Join(append(missing, own...)...)
	}
	settings := f.settings().ValidateSettings()
	problems := append(append(own, f.load.problems(f.fleet)...), f.envLabel, settings)
	if f.engine != onEtcd && len(f.etcdSet) > 0 {
		problems = append(problems, fmt.Errorf("%s: etcd's, but this member runs on %s: give --etcd ENDPOINTS too, or drop them", strings.Join(f.etcdSet, ", "), f.engine))
	}
	switch f.engine {
	case onConsul:
		problems = append(problems, f.consul.Validate())
	case onEtcd:
		problems = append(problems, f.etcd.Validate(), prefixProblem(f.consul.Prefix))
		if len(f.consulSet) > 0 {
			problems = append(problems, fmt.Errorf("%s: Consul's, but this member runs on etcd (--etcd); drop them", strings.Join(f.consulSet, ", ")))
		}
	}
	if settings == nil {
		switch f.engine {
		case onConsul:
			libs = append(libs, func() error { return f.consul.ValidateSession(f.policy.SessionSpec(f.id)) })
		case onEtcd:
			libs = append(libs, func() error { return etcd.ValidateSession(f.policy.SessionSpec(f.id)) })
		}
		for _, lib := range libs {
			problems = append(problems, lib())
		}
	}
	return errors.Join(problems...)
}

// prefixProblem is what is wrong with a fleet prefix that the coordinator
// does not check itself (fleetkeys.PrefixProblem, as --prefix), or nil.
func prefixProblem(prefix string) error {
	if p := fleetkeys.PrefixProblem(prefix); p != "" {
		return errors.New("--" + p)
	}
	return nil
}

package main

import (
	"flag"
	"os"
	"strings"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// memberFlags are the flags shared by the commands that run one member of a
// fleet (`shardd worker`, `shardd run`): where the fleet is, who this
// member is, its lease, and how it is observed.
type memberFlags struct {
	consul   consul.Config
	fleet    shard.Config
	id       string
	policy   shard.LeasePolicy
	drain    time.Duration
	httpAddr string
	level    string
}

// register adds the shared flags to fs, with the defaults; prefixHelp,
// idHelp and drainHelp say what --prefix, --id and --drain-timeout mean
// for this command.
func (f *memberFlags) register(fs *flag.FlagSet, prefixHelp, idHelp, drainHelp string) {
	f.consul, f.policy = consul.DefaultConfig(), shard.DefaultPolicy
	f.consul.RegisterFlags(fs)
	host, _ := os.Hostname()
	fs.StringVar(&f.consul.Prefix, "prefix", "", prefixHelp)
	fs.IntVar(&f.fleet.Shards, "shards", 0, "number of shards in the fleet (required; must match the fleet's stored config)")
	fs.StringVar(&f.fleet.Name, "shard-name", shard.DefaultName, "shard name stem: shards are named STEM-000, STEM-001, …")
	fs.StringVar(&f.id, "id", host, idHelp)
	fs.DurationVar(&f.policy.TTL, "ttl", f.policy.TTL, "session TTL (liveness check: the check's TTL; liveness ttl: at least 10s)")
	fs.DurationVar(&f.policy.RenewEvery, "renew", f.policy.RenewEvery, "renewal interval")
	fs.DurationVar(&f.policy.PauseBudget, "pause-budget", f.policy.PauseBudget, "pause budget (2×renew + pause must fit in ttl)")
	fs.DurationVar(&f.policy.LockDelay, "lock-delay", 0, "how long the shards of this worker's session stay closed to everyone after the session ends other than by a release; at least ttl − pause-budget (0: the ttl)")
	fs.DurationVar(&f.drain, "drain-timeout", 10*time.Second, drainHelp)
	fs.StringVar(&f.httpAddr, "http", "", "serve Prometheus /metrics and /status on this address, e.g. :9100 (default: off)")
	fs.StringVar(&f.level, "log-level", "info", "log level: debug, info, warn, error")
}

// check reports, through add, every problem of the shared flags except
// --prefix (whose rules differ by command). onConsul: the member runs on
// Consul, where TTL liveness has a minimum TTL.
func (f memberFlags) check(add func(format string, args ...any), onConsul bool) {
	if f.fleet.Shards == 0 {
		add("--shards is required: the number of shards in the fleet")
	} else if err := f.fleet.Validate(); err != nil {
		add("--shards %d / --shard-name %q: %v", f.fleet.Shards, f.fleet.Name, err)
	}
	if f.id == "" {
		add("--id is required (the host name is unknown)")
	} else if strings.ContainsAny(f.id, "/ \t\n") {
		add("--id %q must not contain '/' or spaces", f.id)
	}
	if err := f.policy.Validate(); err != nil {
		add("--ttl/--renew/--pause-budget/--lock-delay: %v", err)
	} else if onConsul && f.consul.Liveness == consul.LivenessTTL && f.policy.TTL < consul.MinSessionTTL {
		add("--ttl %v: with --consul-liveness ttl Consul's minimum session TTL is %v (use --consul-liveness check for shorter TTLs)",
			f.policy.TTL, consul.MinSessionTTL)
	}
	if ld := f.policy.EffectiveLockDelay(); onConsul && ld > consul.MaxLockDelay {
		add("--lock-delay %v (with --ttl %v): Consul's longest lock-delay is %v", ld, f.policy.TTL, consul.MaxLockDelay)
	}
	if f.drain < 0 {
		add("--drain-timeout %v must not be negative", f.drain)
	}
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/internal/bench/steady"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// consulSteadyCmd is `shardbench consul-steady`: its flags, and a table or
// JSON of internal/bench/steady's figures.
func consulSteadyCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardbench consul-steady", flag.ContinueOnError)
	o := steady.Options{Consul: consul.DefaultConfig(), Policy: shard.DefaultPolicy}
	o.Consul.RegisterFlags(fs)
	fs.StringVar(&o.Consul.Prefix, "prefix", "shardbench", "KV prefix under which each run gets a fresh fleet prefix")
	fs.IntVar(&o.Workers, "workers", 12, "workers in each fleet (in this process, each with its own Consul client and session)")
	shards := fs.String("shards", "128,4096", "comma-separated shard counts, one fleet each")
	fs.DurationVar(&o.Window, "window", 30*time.Second, "steady-state measurement window")
	fs.DurationVar(&o.Converge, "converge-timeout", 2*time.Minute, "give up on a cold start after this long")
	fs.DurationVar(&o.Policy.TTL, "ttl", o.Policy.TTL, "session TTL")
	fs.DurationVar(&o.Policy.RenewEvery, "renew", o.Policy.RenewEvery, "renewal interval")
	fs.DurationVar(&o.Policy.PauseBudget, "pause-budget", o.Policy.PauseBudget, "pause budget")
	asJSON := fs.Bool("json", false, "print one JSON object per fleet instead of a table")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardbench consul-steady [flags]

Starts, for each shard count, a fresh fleet of workers on Consul at once and
reports how long they take to own every shard within one of each other and
how many acquire attempts failed; then counts every HTTP request each
worker sends to Consul over a steady-state window. One session per worker
and one blocking watch per worker: the steady rate must not grow with the
shard count. Run it against an agent of its own (bin/consul agent -dev).

`)
		fs.PrintDefaults()
	}
	if ok, code := parse(fs, args, stderr); !ok {
		return code
	}
	var problems []error
	for _, s := range strings.Split(*shards, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > shard.MaxShards {
			problems = append(problems, fmt.Errorf("--shards %q: want comma-separated counts in 1..%d", *shards, shard.MaxShards))
			break
		}
		o.Shards = append(o.Shards, n)
	}
	if o.Workers < 1 {
		problems = append(problems, fmt.Errorf("--workers %d: want at least 1", o.Workers))
	}
	if o.Window <= 0 {
		problems = append(problems, fmt.Errorf("--window %v must be positive", o.Window))
	}
	if err := o.Policy.Validate(); err != nil {
		problems = append(problems, fmt.Errorf("--ttl/--renew/--pause-budget: %w", err))
	}
	if err := o.Consul.Validate(); err != nil {
		problems = append(problems, err)
	}
	if err := errors.Join(problems...); err != nil {
		fmt.Fprintf(stderr, "shardbench consul-steady: %v\n", err)
		return exitBadInvoke
	}

	var results []steady.Result
	for _, n := range o.Shards {
		fmt.Fprintf(stderr, "consul-steady: %d workers over %d shards on %s …\n", o.Workers, n, o.Consul.Address)
		r, err := steady.Measure(ctx, o, n, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "shardbench consul-steady: %d shards: %v\n", n, err)
			return exitFailed
		}
		results = append(results, r)
		if *asJSON {
			printJSON(stdout, r)
		}
	}
	if !*asJSON {
		steady.Print(stdout, results)
	}
	return exitOK
}

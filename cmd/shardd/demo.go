package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/shardlease/shardlease/internal/demo"
	"github.com/shardlease/shardlease/internal/logging"
)

func demoCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardd demo", flag.ContinueOnError)
	var o demo.Options
	fs.IntVar(&o.Workers, "workers", 12, "workers to start")
	fs.IntVar(&o.Shards, "shards", 128, "shards in the fleet")
	fs.DurationVar(&o.Duration, "duration", 0, "how long to run (at least 20s); 0 runs until Ctrl-C")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of the fault schedule (0: random, printed)")
	fs.StringVar(&o.DataDir, "data", "", "keep the bbolt offsets file in this directory (default: a temp dir, removed)")
	fs.DurationVar(&o.Policy.TTL, "ttl", demo.DemoPolicy.TTL, "session TTL")
	fs.DurationVar(&o.Policy.RenewEvery, "renew", demo.DemoPolicy.RenewEvery, "renewal interval")
	fs.DurationVar(&o.Policy.PauseBudget, "pause-budget", demo.DemoPolicy.PauseBudget, "pause budget (2×renew + pause must fit in ttl)")
	o.Policy.LockDelay = demo.DemoPolicy.LockDelay
	addLockDelayFlag(fs, &o.Policy.LockDelay)
	fs.IntVar(&o.Rate, "rate", 50, "messages per second per shard in the synthetic stream")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object, the last line of output")
	level := fs.String("log-level", "error", "log level: debug, info, warn, error")
	httpAddr := fs.String("http", "", "serve the live dashboard, /api/v1/fleet and /metrics on this address, e.g. 127.0.0.1:8080")
	onConsul := addDemoConsulFlags(fs)
	offsetsSpec := fs.String("offsets", "bolt", "where offsets live: bolt (a file, see --data), consul (Consul KV on the agent of the consul flags), or a postgres:// URL")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: shardd demo [flags]\n\nRuns a fleet on the embedded coordinator (or, with --consul ADDR, on Consul) with offsets in bbolt (or Consul KV, or PostgreSQL) and injected faults.\n\n")
		fs.PrintDefaults()
	}
	if ok, code := parse(fs, args, stderr); !ok {
		return code
	}
	// The library reads 0 as "the default"; on the command line the
	// defaults are already filled in, so a 0 is the user's own.
	for _, f := range []struct {
		name string
		v    int
	}{{"workers", o.Workers}, {"shards", o.Shards}, {"rate", o.Rate}} {
		if f.v == 0 {
			fmt.Fprintf(stderr, "shardd demo: --%s 0: must be positive\n", f.name)
			return exitBadInvoke
		}
	}
	if err := onConsul.apply(fs, &o); err != nil {
		fmt.Fprintf(stderr, "shardd demo: %v\n", err)
		return exitBadInvoke
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(stderr, "shardd demo: %v\n", err)
		return exitBadInvoke
	}
	o.Start = time.Now() // the workers' log lines and the progress lines on one clock
	log, err := logging.ConsoleSince(*level, stderr, o.Start)
	if err != nil {
		fmt.Fprintf(stderr, "shardd demo: %v\n", err)
		return exitBadInvoke
	}
	defer log.Sync()
	o.Logger = log
	store, closeStore, err := openDemoOffsets(ctx, *offsetsSpec, onConsul.cfg, o.Backend != nil, func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) })
	if err != nil {
		fmt.Fprintf(stderr, "shardd demo: %v\n", err)
		return exitBadInvoke
	}
	defer closeStore()
	if store != nil {
		o.Store = store
	}
	if *httpAddr != "" {
		h, err := listenDemoHTTP(*httpAddr, log, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "shardd demo: %v\n", err)
			return exitBadInvoke
		}
		defer h.stop()
		o.Registry = demoRegistry()
		o.OnStart = h.start(ctx)
	}

	sum, err := demo.Run(ctx, o, stderr)
	switch {
	case errors.Is(err, demo.ErrInvariant):
	case err != nil: // the options were valid: a server or the store failed
		fmt.Fprintf(stderr, "shardd demo: %v\n", err)
		return exitFailed
	}
	if *asJSON {
		printJSON(stdout, sum)
	} else {
		fmt.Fprint(stdout, sum.Text())
	}
	if err != nil {
		return exitFailed
	}
	return exitOK
}

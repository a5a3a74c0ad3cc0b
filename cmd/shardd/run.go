package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/logging"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// runFlags is what `shardd run` reads from its command line.
type runFlags struct {
	memberFlags
	onConsul bool // --consul was given; otherwise the embedded coordinator
	argv     []string
}

// defaultRunPrefix names the fleet of an embedded `shardd run` (children see
// it as SHARDLEASE_PREFIX); with --consul the prefix must be given.
const defaultRunPrefix = "shardlease/run"

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseRunFlags(args, stderr)
	if !ok {
		return code
	}
	log, err := logging.Console(f.level, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "shardd run: %v\n", err)
		return exitBadInvoke
	}
	defer log.Sync()
	return superviseFleet(ctx, f, stdout, stderr, log)
}

func parseRunFlags(args []string, stderr io.Writer) (runFlags, int, bool) {
	fs := flag.NewFlagSet("shardd run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f runFlags
	f.register(fs,
		"the fleet's KV prefix, e.g. shardlease/orders (required with --consul; default "+defaultRunPrefix+")",
		"this supervisor's worker ID, unique among live workers",
		"on revoke, how long a child has between SIGTERM and SIGKILL")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardd run --shards N [--prefix P] [--consul ADDR] [flags] -- COMMAND [ARGS…]

Runs COMMAND once per shard this worker owns, each in its own process group,
with the claim in its environment:

  SHARDLEASE_SHARD        the shard, e.g. stream/shard-003
  SHARDLEASE_SHARD_INDEX  its index, 0..N-1
  SHARDLEASE_SHARDS       N
  SHARDLEASE_TOKEN        the claim's fencing token: send it with every write
                          and have the store refuse a token lower than the
                          highest it has seen for the shard (tokens are per
                          shard; shards taken in one transaction share one)
  SHARDLEASE_WORKER       this worker's ID
  SHARDLEASE_PREFIX       the fleet's prefix

The rest of shardd's environment is passed on, except CONSUL_HTTP_TOKEN and
CONSUL_HTTP_TOKEN_FILE: shardd's ACL token is not the child's.

The child's output is prefixed with its shard. When the shard is revoked
(rebalanced away, or shardd is stopping) the child's process group gets
SIGTERM, then SIGKILL after --drain-timeout; when the shard is lost (the
session expired, or renewals failed past the local deadline) it gets SIGKILL
at once. A child that exits while the shard is owned is restarted with
backoff. SIGINT, SIGTERM or SIGHUP stops every child this way and releases
every shard; a second signal kills the children at once.

Without --consul the fleet lives in this process (the embedded coordinator):
this worker owns every shard. With --consul ADDR, every shardd run with the
same --prefix and --shards shares the shards, with rebalancing. Consul
settings also come from the environment as for the consul CLI.

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return f, exitOK, false
		}
		return f, exitBadInvoke, false
	}
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "consul" {
			f.onConsul = true
		}
	})
	f.argv = fs.Args()
	if !f.onConsul && f.consul.Prefix == "" {
		f.consul.Prefix = defaultRunPrefix
	}
	if err := f.validate(); err != nil {
		fmt.Fprintf(stderr, "shardd run: %v\n", err)
		return f, exitBadInvoke, false
	}
	return f, exitOK, true
}

// validate reports every problem at once, naming the flag and the value.
func (f runFlags) validate() error {
	var problems []error
	add := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }
	if len(f.argv) == 0 {
		add("no command: put the program to run after --, e.g. shardd run --shards 8 -- sh -c 'echo $SHARDLEASE_SHARD'")
	} else if _, err := exec.LookPath(f.argv[0]); err != nil {
		add("command %q: %v", f.argv[0], err)
	}
	if !f.onConsul && (strings.HasPrefix(f.consul.Prefix, "/") || strings.HasSuffix(f.consul.Prefix, "/")) {
		add("--prefix %q must not start or end with '/'", f.consul.Prefix)
	}
	if f.onConsul {
		if f.consul.Prefix == "" {
			add("--prefix is required with --consul: the fleet's KV prefix, e.g. shardlease/orders")
		} else if err := f.consul.Validate(); err != nil {
			add("%v", err)
		}
	}
	f.check(add, f.onConsul)
	return errors.Join(problems...)
}

// superviseFleet runs the worker whose handler is the supervisor until ctx
// ends, and returns the exit code.
func superviseFleet(ctx context.Context, f runFlags, stdout, stderr io.Writer, log *zap.Logger) int {
	var coord shard.Coordinator
	var requests consul.RequestCounter
	where := "the embedded coordinator (this process is the whole fleet)"
	if f.onConsul {
		ccfg := f.consul
		ccfg.WrapTransport = requests.Wrap
		c, err := consul.New(ccfg)
		if err != nil {
			log.Error("bad Consul settings", zap.Error(err))
			return exitBadInvoke
		}
		defer c.Close()
		coord = c
		where = fmt.Sprintf("Consul at %s, prefix %s", ccfg.Address, ccfg.Prefix)
	} else {
		coord = memory.New()
	}
	// The worker fences each claim in an offset store before the handler
	// starts. Children keep their own state, so this one is only the
	// worker's: in memory, per process.
	store := offmem.New()
	defer store.Close()

	index := make(map[string]int, f.fleet.Shards)
	for i, id := range f.fleet.IDs() {
		index[string(id)] = i
	}
	sup := &supervisor{argv: f.argv, prefix: f.consul.Prefix, shards: f.fleet.Shards, index: index, drain: f.drain,
		log: log.With(zap.String("worker", f.id)), stdout: stdout, stderr: stderr, children: map[int]string{}}

	var ln net.Listener
	address := ""
	if f.httpAddr != "" {
		var err error
		if ln, err = net.Listen("tcp", f.httpAddr); err != nil {
			log.Error("cannot serve --http", zap.String("addr", f.httpAddr), zap.Error(err))
			return exitFailed
		}
		defer ln.Close()
		address = ln.Addr().String()
	}
	reg := prometheus.NewRegistry()
	w, err := worker.New(worker.Config{
		ID:          f.id,
		Address:     address,
		Version:     version(),
		Fleet:       f.fleet,
		Coordinator: coord,
		Offsets:     store,
		Handler:     sup,
		Policy:      f.policy,
		// At the drain timeout the claim is lost and the child killed; the
		// lock outlives it until it is reaped (the worker releases only
		// after Process returned).
		DrainTimeout: f.drain,
		Registerer:   reg,
		Logger:       log,
	})
	if err != nil {
		log.Error("invalid worker config", zap.Error(err))
		return exitBadInvoke
	}
	if ln != nil {
		stop, err := serveWorkerHTTP(ln, reg, w, &requests, f.id, log.With(zap.String("worker", f.id)))
		if err != nil {
			log.Error("cannot serve --http", zap.String("addr", f.httpAddr), zap.Error(err))
			return exitFailed
		}
		defer stop()
	}

	// The first SIGINT, SIGTERM or SIGHUP (the terminal went away) stops the
	// children in order; a second one kills them at once. Listening here
	// also keeps a second signal (or a hangup) from killing shardd before it
	// has stopped its children, which would leave their own children behind.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	watching := make(chan struct{})
	defer close(watching)
	go func() {
		for n := 0; ; {
			select {
			case sig := <-sigs:
				if n++; n == 1 {
					log.Info("stopping every child", zap.Stringer("signal", sig))
					cancel()
				} else {
					killed := sup.killEverything()
					log.Warn("second signal: every child killed at once (SIGKILL)", zap.Int("children", killed))
				}
			case <-watching:
				return
			}
		}
	}()

	log.Info("supervising", zap.String("worker", f.id), zap.String("coordinator", where),
		zap.Int("shards", f.fleet.Shards), zap.Strings("command", f.argv),
		zap.Duration("ttl", f.policy.TTL), zap.Duration("drain_timeout", f.drain))
	err = w.Run(ctx)
	if n := sup.killEverything(); n > 0 { // a backstop: none should be left
		log.Warn("children still running after the drain: killed", zap.Int("children", n))
	}
	if err != nil {
		log.Error("cannot run", zap.Error(err))
		return exitFailed
	}
	log.Info("stopped: every child ended, every shard released")
	return exitOK
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/logging"
	"github.com/shardlease/shardlease/offsets"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/worker"
	"github.com/shardlease/shardlease/worker/exec"
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
	return runMember(ctx, f.member(stdout, stderr), stderr)
}

func parseRunFlags(args []string, stderr io.Writer) (runFlags, int, bool) {
	fs := flag.NewFlagSet("shardd run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f runFlags
	f.register(fs,
		"the fleet's key prefix, e.g. shardlease/orders (required with --consul or --etcd; default "+defaultRunPrefix+")",
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
  SHARDLEASE_LOAD_FD      3: write lines "load <number>" there to report the
                          shard's load (--load-balance); otherwise the load
                          is the rate of commits through the claim, 0 for
                          a child that commits to a store of its own

The rest of shardd's environment is passed on, except CONSUL_HTTP_TOKEN,
CONSUL_HTTP_TOKEN_FILE, ETCDCTL_USER, ETCDCTL_PASSWORD, ETCDCTL_CERT and
ETCDCTL_KEY: shardd's credentials are not the child's.

The child's output is prefixed with its shard. When the shard is revoked
(rebalanced away, or shardd is stopping) the child's process group gets
SIGTERM, then SIGKILL after --drain-timeout; when the shard is lost (the
session expired, or renewals failed past the local deadline) it gets SIGKILL
at once. A child that exits while the shard is owned is restarted with
backoff. SIGINT, SIGTERM or SIGHUP stops every child this way and releases
every shard; a second signal kills the children at once.

Without --consul or --etcd the fleet lives in this process (the embedded
coordinator): this worker owns every shard. With --consul ADDR (or --etcd
ENDPOINTS), every shardd run with the same --prefix and --shards shares the
shards, with rebalancing. Consul settings also come from the environment as
for the consul CLI, etcd's as for etcdctl (not ETCDCTL_ENDPOINTS).

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
	switch {
	case len(f.etcd.Endpoints) > 0:
		f.engine = onEtcd
	case f.onConsul:
		f.engine = onConsul
	}
	f.resolvePolicy(fs)
	f.argv = fs.Args()
	if f.engine == embedded && f.consul.Prefix == "" {
		f.consul.Prefix = defaultRunPrefix
	}
	if err := f.validate(); err != nil {
		fmt.Fprintf(stderr, "shardd run: %v\n", err)
		return f, exitBadInvoke, false
	}
	return f, exitOK, true
}

// validate reports every problem at once: the shared flags' (check), the
// command's, and the supervisor's config.
func (f runFlags) validate() error {
	var required, own []error
	if len(f.argv) == 0 {
		required = append(required, errors.New("no command: put the program to run after --, e.g. shardd run --shards 8 -- sh -c 'echo $SHARDLEASE_SHARD'"))
	}
	if f.engine != embedded && f.consul.Prefix == "" {
		required = append(required, fmt.Errorf("--prefix is required with --%s: the fleet's key prefix, e.g. shardlease/orders", map[engine]string{onConsul: "consul", onEtcd: "etcd"}[f.engine]))
	}
	if f.onConsul && f.engine == onEtcd {
		own = append(own, errors.New("--consul and --etcd: a fleet runs on one coordinator; give one"))
	}
	// On Consul the prefix is checked with the rest of its settings (on
	// etcd, by check); the embedded coordinator only passes it on to the
	// children.
	if f.engine == embedded {
		own = append(own, prefixProblem(f.consul.Prefix))
	}
	return f.check(required, own, f.supervisor(nil, nil).Validate)
}

// supervisor is the exec.Config of the handler: one child per owned
// shard, given SIGTERM then SIGKILL after --drain-timeout on revoke.
func (f runFlags) supervisor(stdout, stderr io.Writer) exec.Config {
	return exec.Config{Argv: f.argv, Prefix: f.consul.Prefix, Fleet: f.fleet, DrainGrace: f.drain, Stdout: stdout, Stderr: stderr}
}

// member is the fleet member `shardd run` runs: its handler is the
// supervisor; its offset store is in memory, since the children keep their
// own state and the worker only fences claims in it.
func (f runFlags) member(stdout, stderr io.Writer) member {
	return member{
		name: "shardd run", flags: f.memberFlags, localOffsets: true, // the children keep their own
		newLog: logging.Console,
		openStore: func(context.Context, *zap.Logger) (offsets.Store, func(), error) {
			st := offmem.New()
			return st, func() { st.Close() }, nil
		},
		newHandler: func(_ offsets.Store, log *zap.Logger) (worker.Handler, error) {
			cfg := f.supervisor(stdout, stderr)
			cfg.Logger = log
			s, err := exec.New(cfg)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		logFields: []zap.Field{zap.Strings("command", f.argv)},
	}
}

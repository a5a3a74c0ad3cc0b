package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/harness/shardproc"
	"github.com/shardlease/shardlease/internal/offsetlog"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// procFleet is one system's workers as OS processes on this machine, as
// `make chaos` runs them: `shardd worker` for shardlease, apilockd
// (internal/harness/apilock) for the baselines, each built once per fleet.
// A crash is SIGKILL; a stop is SIGTERM, done when the process has exited.
// Each worker writes its history (internal/offsetlog) to a file, and the
// fleet follows the files for their "start" lines: when a shard's new
// handler started, by the worker's wall clock (shardd: after its claim was
// fenced; apilockd: after its lock was acquired, with no fence).
type procFleet struct {
	env    *benchEnv
	sys    string
	dir    string   // binaries, logs and histories; removed with the fleet
	bin    string   // the worker binary
	args   []string // every worker's, before --id and --history
	prefix string
	// The observer: shardlease's coordinator, or a client of the
	// baseline's keys.
	slObs   *consul.Coordinator
	blObs   *api.Client
	blConns *http.Transport

	mu      sync.Mutex
	procs   map[string]*procWorker
	reaping sync.WaitGroup
	started startLog
}

type procWorker struct {
	p        *shardproc.Proc
	tailDone chan struct{} // closed when its history has been read to the end
}

// newProcFleet builds the worker binary of system into a fresh directory
// and prepares a fleet on a fresh prefix: shardlease on policy, the tuned
// baseline tuned to it, or the default baseline.
func newProcFleet(env *benchEnv, system, scenario string, shards int, policy shard.LeasePolicy) (*procFleet, error) {
	dir, err := os.MkdirTemp("", "shardbench-procs-")
	if err != nil {
		return nil, err
	}
	f := &procFleet{env: env, sys: system, dir: dir, procs: map[string]*procWorker{},
		prefix: fmt.Sprintf("shardbench/%s-%s-p-%s", scenario, system, randomHex(4))}
	pkg := "github.com/shardlease/shardlease/internal/harness/apilock/apilockd"
	if system == systemShardlease {
		pkg = "github.com/shardlease/shardlease/cmd/shardd"
	}
	if f.bin, err = shardproc.BuildPackage(dir, pkg); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	addr := env.consul.Address
	if system == systemShardlease {
		// No commits: the workers' histories hold their fences and handler
		// runs, and the figures are the coordination's own.
		f.args = []string{"worker", "--consul", addr, "--prefix", f.prefix, "--shards", strconv.Itoa(shards),
			"--ttl", policy.TTL.String(), "--renew", policy.RenewEvery.String(), "--pause-budget", policy.PauseBudget.String(),
			"--lock-delay", policy.EffectiveLockDelay().String(), "--rate", "1", "--commit-every", "1h", "--log-level", "warn"}
		if f.slObs, err = consul.New(env.coordConfig(f.prefix)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		return f, nil
	}
	cfg := baselineConfig(env, system, f.prefix, shards, policy)
	f.args = []string{"--consul", addr, "--prefix", f.prefix, "--shards", strconv.Itoa(shards), "--mode", string(cfg.Mode),
		"--ttl", cfg.TTL.String(), "--renew", cfg.RenewEvery.String(), "--lock-delay", cfg.LockDelay.String()}
	if cfg.Quick {
		f.args = append(f.args, "--quick")
	}
	conf := env.apiConfig(nil)
	if f.blObs, err = api.NewClient(conf); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	f.blConns = conf.Transport
	return f, nil
}

func (f *procFleet) system() string    { return f.sys }
func (f *procFleet) starts() *startLog { return &f.started }

func (f *procFleet) add(_ context.Context, id string) error {
	history := filepath.Join(f.dir, id+".jsonl")
	args := append(append([]string{}, f.args...), "--id", id, "--history", history)
	p, err := shardproc.Start(f.bin, args, filepath.Join(f.dir, id+".log"))
	if err != nil {
		return err
	}
	pw := &procWorker{p: p, tailDone: make(chan struct{})}
	go func() {
		defer close(pw.tailDone)
		followStarts(history, &f.started, p.Done())
	}()
	f.mu.Lock()
	f.procs[id] = pw
	f.mu.Unlock()
	return nil
}

func (f *procFleet) take(id string) *procWorker { return takeWorker(&f.mu, f.procs, id) }

// crash kills worker id's process with SIGKILL.
func (f *procFleet) crash(id string) {
	pw := f.take(id)
	if pw == nil {
		return
	}
	pw.p.Signal(syscall.SIGKILL)
	if f.env.small && f.sys == systemBaseline {
		invalidateHeld(f.blObs, f.prefix, id)
	}
	f.reaping.Add(1)
	go func() { defer f.reaping.Done(); <-pw.p.Done(); <-pw.tailDone }()
}

// stop sends worker id SIGTERM; the channel closes once it has exited (or
// was killed, 30 s on).
func (f *procFleet) stop(id string) <-chan struct{} {
	done := make(chan struct{})
	pw := f.take(id)
	if pw == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		if err := pw.p.Stop(30 * time.Second); err != nil {
			f.env.logf("shardbench: %s %s: %v", f.sys, id, err)
		}
		<-pw.tailDone
	}()
	return done
}

func (f *procFleet) view(ctx context.Context, after uint64) (view, error) {
	if f.slObs != nil {
		return shardleaseView(ctx, f.slObs, after)
	}
	f.mu.Lock()
	members := make([]string, 0, len(f.procs))
	for id := range f.procs {
		members = append(members, id)
	}
	f.mu.Unlock()
	return baselineView(ctx, f.blObs, f.prefix, after, members)
}

// assignor returns the worker holding P/assignor (shardlease only).
func (f *procFleet) assignor(ctx context.Context, must bool) (string, error) {
	if f.slObs == nil {
		return noAssignor(f, must)
	}
	return readAssignor(ctx, f.slObs, f.prefix, must)
}

func (f *procFleet) close() {
	stopEvery(&f.mu, f.procs, f.stop)
	f.reaping.Wait()
	// Best effort: a given agent should not keep every run's keys.
	if f.slObs != nil {
		_ = f.slObs.DeleteFleet(context.Background())
		f.slObs.Close()
	} else {
		_, _ = f.blObs.KV().DeleteTree(f.prefix+"/", nil)
		f.blConns.CloseIdleConnections()
	}
	os.RemoveAll(f.dir)
}

// followStarts reads the history file at path as it grows, recording in l
// the time of every handler's start line, until done is closed; then it
// reads it once more to the end.
func followStarts(path string, l *startLog, done <-chan struct{}) {
	var off int64
	var rest []byte
	for {
		final := false
		select {
		case <-done:
			final = true
		case <-time.After(5 * time.Millisecond):
		}
		off, rest = readStarts(path, off, rest, l)
		if final {
			return
		}
	}
}

// readStarts reads path from off, records the start lines of its complete
// lines in l, and returns the new offset and the incomplete last line.
func readStarts(path string, off int64, rest []byte, l *startLog) (int64, []byte) {
	fh, err := os.Open(path)
	if err != nil {
		return off, rest // not written yet
	}
	defer fh.Close()
	if _, err := fh.Seek(off, io.SeekStart); err != nil {
		return off, rest
	}
	b, _ := io.ReadAll(bufio.NewReader(fh))
	off += int64(len(b))
	b = append(rest, b...)
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return off, b
		}
		var line struct {
			Phase string `json:"phase"`
			Shard string `json:"shard"`
			At    int64  `json:"at"`
		}
		if json.Unmarshal(b[:i], &line) == nil && line.Phase == offsetlog.PhaseStart {
			l.recordAt(line.Shard, time.Unix(0, line.At))
		}
		b = b[i+1:]
	}
}

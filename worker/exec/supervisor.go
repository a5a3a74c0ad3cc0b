package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// Supervisor is a worker.Handler that runs Config.Argv once per owned
// shard; see the package doc for what it guarantees. Process is called
// concurrently for different shards, as the worker does.
type Supervisor struct {
	cfg   Config
	index map[shard.ID]int // shard → its index in the fleet
	log   *zap.Logger

	outMu sync.Mutex // one line at a time, whichever child it comes from

	mu       sync.Mutex
	children map[int]shard.ID // pid (= process group) → shard
	killAll  bool             // set by KillAll: children started later die at once

	badLoadLines atomic.Int64 // lines on the load pipes that were not loads

	dog watchdog // the children's dead man's switch (watchdog.go)
}

// New returns a Supervisor for cfg, or an error wrapping ErrInvalidConfig
// that names every problem.
func New(cfg Config) (*Supervisor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Argv, cfg.Env = slices.Clone(cfg.Argv), slices.Clone(cfg.Env)
	index := make(map[shard.ID]int, cfg.Fleet.Shards)
	for i, id := range cfg.Fleet.IDs() {
		index[id] = i
	}
	return &Supervisor{cfg: cfg, index: index, log: cfg.Logger, children: map[int]shard.ID{}}, nil
}

// waitDelay bounds how long Process waits for the output pipes once the
// child has exited: a grandchild that left the group may hold them open.
const waitDelay = time.Second

// ClosesShards is false: a child process cannot be told to run its shard
// to an end and close it, so a fleet with a Supervisor's worker does not
// reshard (worker.ShardCloser).
func (s *Supervisor) ClosesShards() bool { return false }

// Process runs the child for one owned shard until the claim ends. It
// returns nil once the claim has ended and the child has been reaped, and
// an error wrapping ErrChildExited when the child exits while the shard is
// still owned (the worker then calls it again, with backoff).
func (s *Supervisor) Process(ctx context.Context, c *worker.Claim) error {
	log := s.log.With(zap.String("shard", string(c.Shard)), zap.Uint64("token", uint64(c.Token)))
	if _, ok := s.index[c.Shard]; !ok {
		return fmt.Errorf("%w: shard %q is not one of the fleet's %d shards named %q", ErrInvalidConfig, c.Shard, s.cfg.Fleet.Shards, s.cfg.Fleet.Name)
	}
	base := s.cfg.Env
	if base == nil {
		base = os.Environ()
	}
	cmd := osexec.Command(s.cfg.Argv[0], s.cfg.Argv[1:]...)
	cmd.Env = s.childEnv(base, c)
	prefix := "[" + string(c.Shard) + "] "
	stdout := &lineWriter{mu: &s.outMu, out: s.cfg.Stdout, prefix: prefix}
	stderr := &lineWriter{mu: &s.outMu, out: s.cfg.Stderr, prefix: prefix}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = procAttr()
	cmd.WaitDelay = waitDelay
	loads, err := newLoadPipe(cmd)
	if err != nil {
		return fmt.Errorf("starting %q for %s: %w", s.cfg.Argv[0], c.Shard, err)
	}

	_, watched := c.Deadline()
	if watched {
		if err := s.dog.hold(s.cfg.Stderr); err != nil {
			loads.close()
			log.Error("cannot start the children's watchdog; not starting the child", zap.Error(err))
			return fmt.Errorf("starting %q for %s: %w", s.cfg.Argv[0], c.Shard, err)
		}
	}
	s.mu.Lock()
	if s.killAll {
		s.mu.Unlock()
		loads.close()
		if watched {
			_ = s.dog.release(0, string(c.Shard))
		}
		<-ctx.Done()
		return nil
	}
	err = cmd.Start()
	if err == nil {
		s.children[cmd.Process.Pid] = c.Shard
	}
	s.mu.Unlock()
	if err != nil {
		loads.close()
		if watched {
			_ = s.dog.release(0, string(c.Shard))
		}
		log.Error("cannot start the command", zap.Strings("command", s.cfg.Argv), zap.Error(err))
		return fmt.Errorf("starting %q for %s: %w", s.cfg.Argv[0], c.Shard, err)
	}
	pid := cmd.Process.Pid
	log = log.With(zap.Int("pid", pid))
	log.Info("child started")
	loads.run(s, c.ReportLoad, log)
	defer loads.stop() // after the child is reaped (every return below waits for it)
	stopRenewing := func() {}
	if watched {
		stopRenewing = s.renewWatch(pid, c, log)
	}
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		stopRenewing() // before the group is released: no renewal may hold a reaped group
		stdout.flush()
		stderr.flush()
		s.mu.Lock()
		delete(s.children, pid)
		s.mu.Unlock()
		exited <- err
	}()

	select {
	case err := <-exited:
		killGroup(pid, syscall.SIGKILL) // whatever it left behind in its group
		log.Warn("child exited while the shard is owned; restarting with backoff", zap.String("exit", exitText(err)))
		return fmt.Errorf("%w: child %d for %s: %s", ErrChildExited, pid, c.Shard, exitText(err))
	case <-ctx.Done():
	}

	cause := context.Cause(ctx)
	if errors.Is(cause, worker.ErrLost) || c.Err() != nil {
		killGroup(pid, syscall.SIGKILL)
		err := <-exited
		log.Warn("shard lost: child killed at once (SIGKILL)", zap.NamedError("cause", cause), zap.String("exit", exitText(err)))
		return nil
	}
	killGroup(pid, syscall.SIGTERM)
	log.Info("shard revoked: SIGTERM sent, waiting for the child", zap.NamedError("cause", cause), zap.Duration("drain_grace", s.cfg.DrainGrace))
	grace := time.NewTimer(s.cfg.DrainGrace)
	defer grace.Stop()
	var why string
	select {
	case err := <-exited:
		killGroup(pid, syscall.SIGKILL) // stragglers in its group that ignored SIGTERM
		log.Info("child stopped", zap.String("exit", exitText(err)))
		return nil
	case <-c.Lost():
		why = "authority ended while the child drained: SIGKILL sent"
	case <-grace.C:
		why = "drain grace passed: SIGKILL sent"
	}
	killGroup(pid, syscall.SIGKILL)
	err = <-exited
	log.Warn(why, zap.NamedError("cause", c.Err()), zap.Duration("drain_grace", s.cfg.DrainGrace), zap.String("exit", exitText(err)))
	return nil
}

// renewWatch hands child pid's process group to the watchdog until the
// claim's deadline, and renews it every watchdogRenewEvery as the lease's
// renewals move the deadline, until the returned function is called, which
// releases the group.
func (s *Supervisor) renewWatch(pid int, c *worker.Claim, log *zap.Logger) (stop func()) {
	renew := func() {
		deadline, _ := c.Deadline()
		if err := s.dog.renew(pid, deadline, string(c.Shard)); err != nil {
			log.Error("cannot renew the child's deadline with the watchdog: a stall of this process would not stop it", zap.Error(err))
		}
	}
	renew()
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(watchdogRenewEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				renew()
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		if err := s.dog.release(pid, string(c.Shard)); err != nil {
			log.Warn("cannot release the child's group from the watchdog", zap.Error(err))
		}
	}
}

// KillAll sends SIGKILL to every child's process group at once and keeps
// new ones from starting (Process then waits for its claim to end). It
// returns how many children it signalled.
func (s *Supervisor) KillAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killAll = true
	for pid := range s.children {
		killGroup(pid, syscall.SIGKILL)
	}
	return len(s.children)
}

// killGroup signals the process group led by pid. The group's ID stays
// reserved while any member lives, so a group whose leader was reaped is
// still the child's; an empty group gives ESRCH, which is ignored.
func killGroup(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

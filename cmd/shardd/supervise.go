package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/worker"
)

// supervisor is the worker.Handler of `shardd run`: one child process per
// owned shard, in its own process group, with the claim in its environment
// and its output prefixed with the shard.
//
// When the shard's context ends, the child's process group gets SIGTERM
// (revoked: a hand-off or shutdown) and SIGKILL once drain has passed, or
// SIGKILL at once (lost: authority is already gone, another owner may be
// starting). A child that exits while the shard is owned makes Process
// return an error, and the worker runs Process again with backoff.
type supervisor struct {
	argv   []string
	prefix string // the fleet's KV prefix, passed to children
	shards int
	index  map[string]int // shard ID → its index in the fleet
	drain  time.Duration
	log    *zap.Logger

	outMu          sync.Mutex // one line at a time, whichever child it comes from
	stdout, stderr io.Writer

	mu       sync.Mutex
	children map[int]string // pid (= process group) → shard
	killAll  bool           // set by killEverything: children started later die at once
}

// Environment variables a child gets.
const (
	envShard      = "SHARDLEASE_SHARD"
	envShardIndex = "SHARDLEASE_SHARD_INDEX"
	envShards     = "SHARDLEASE_SHARDS"
	envToken      = "SHARDLEASE_TOKEN"
	envWorker     = "SHARDLEASE_WORKER"
	envPrefix     = "SHARDLEASE_PREFIX"
)

// secretEnv are variables of shardd's environment a child does not get:
// shardd's Consul ACL token is for its own calls, and a child that needs
// Consul should carry a token of its own (least privilege).
var secretEnv = []string{"CONSUL_HTTP_TOKEN", "CONSUL_HTTP_TOKEN_FILE"}

// childEnviron returns env without secretEnv and without any SHARDLEASE_*
// variable (the child's own are appended after).
func childEnviron(env []string) []string {
	out := make([]string, 0, len(env))
next:
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SHARDLEASE_") {
			continue
		}
		for _, s := range secretEnv {
			if name == s {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// maxLine caps a buffered output line; a longer one is cut into pieces.
const maxLine = 64 << 10

// Process runs the child for one owned shard until the claim ends.
func (s *supervisor) Process(ctx context.Context, c *worker.Claim) error {
	log := s.log.With(zap.String("shard", string(c.Shard)), zap.Uint64("token", uint64(c.Token)))
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Env = append(childEnviron(os.Environ()),
		envShard+"="+string(c.Shard),
		envShardIndex+"="+strconv.Itoa(s.index[string(c.Shard)]),
		envShards+"="+strconv.Itoa(s.shards),
		envToken+"="+strconv.FormatUint(uint64(c.Token), 10),
		envWorker+"="+c.Worker,
		envPrefix+"="+s.prefix,
	)
	prefix := "[" + string(c.Shard) + "] "
	stdout := &lineWriter{mu: &s.outMu, out: s.stdout, prefix: prefix}
	stderr := &lineWriter{mu: &s.outMu, out: s.stderr, prefix: prefix}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own process group, so that signals reach everything it started
	// and a Ctrl-C on the terminal reaches shardd alone (which then stops
	// the children in order). Pdeathsig: if shardd itself is killed, the
	// child dies with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A grandchild that left the group may hold the output pipes open: do
	// not wait for it longer than this once the child has exited.
	cmd.WaitDelay = time.Second

	s.mu.Lock()
	if s.killAll {
		s.mu.Unlock()
		<-ctx.Done()
		return nil
	}
	err := cmd.Start()
	if err == nil {
		s.children[cmd.Process.Pid] = string(c.Shard)
	}
	s.mu.Unlock()
	if err != nil {
		log.Error("cannot start the command", zap.Strings("command", s.argv), zap.Error(err))
		return fmt.Errorf("starting %q for %s: %w", s.argv[0], c.Shard, err)
	}
	pid := cmd.Process.Pid
	log = log.With(zap.Int("pid", pid))
	log.Info("child started")
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		stdout.flush()
		stderr.flush()
		s.mu.Lock()
		delete(s.children, pid)
		s.mu.Unlock()
		exited <- err
	}()

	select {
	case err := <-exited:
		// Exited on its own while the shard is owned: the worker runs
		// Process again, with backoff.
		killGroup(pid, syscall.SIGKILL) // whatever it left behind in its group
		if err == nil {
			err = errors.New("exit status 0")
		}
		log.Warn("child exited while the shard is owned; restarting with backoff", zap.Error(err))
		return fmt.Errorf("child %d for %s: %w", pid, c.Shard, err)
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
	log.Info("shard revoked: SIGTERM sent, waiting for the child", zap.NamedError("cause", cause), zap.Duration("drain_timeout", s.drain))
	// The worker ends the claim's authority at the drain timeout, and at
	// its local deadline if the lease is lost while the child drains: a
	// draining child is killed then, whichever comes first. The lock is
	// released only after Process returns, so the next owner's child
	// cannot start while this one is still being reaped.
	select {
	case err := <-exited:
		killGroup(pid, syscall.SIGKILL) // stragglers in its group that ignored SIGTERM
		log.Info("child stopped", zap.String("exit", exitText(err)))
	case <-c.Lost():
		killGroup(pid, syscall.SIGKILL)
		err := <-exited
		log.Warn("authority ended while the child drained: SIGKILL sent", zap.NamedError("cause", c.Err()),
			zap.Duration("drain_timeout", s.drain), zap.String("exit", exitText(err)))
	}
	return nil
}

// killEverything sends SIGKILL to every child's process group at once and
// keeps new ones from starting: the answer to a second Ctrl-C.
func (s *supervisor) killEverything() int {
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

// lineWriter writes a child's output line by line, each line prefixed and
// written whole under mu, so lines of different children never mix.
type lineWriter struct {
	mu     *sync.Mutex
	out    io.Writer
	prefix string
	buf    []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i+1])
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) >= maxLine {
		l.emit(append(l.buf, '\n'))
		l.buf = nil
	}
	l.buf = append([]byte(nil), l.buf...) // do not pin the emitted lines
	return len(p), nil
}

// flush writes a last line that had no newline.
func (l *lineWriter) flush() {
	if len(l.buf) > 0 {
		l.emit(append(l.buf, '\n'))
		l.buf = nil
	}
}

func (l *lineWriter) emit(line []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.out.Write(append([]byte(l.prefix), line...))
}

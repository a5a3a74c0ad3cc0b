package shardproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Build builds cmd/shardd into dir and returns the binary's path.
func Build(dir string) (string, error) {
	return BuildPackage(dir, "github.com/shardlease/shardlease/cmd/shardd")
}

// BuildPackage builds the main package pkg (an import path) into dir and
// returns the binary's path, named after the path's last element.
func BuildPackage(dir, pkg string) (string, error) {
	name := pkg[strings.LastIndexByte(pkg, '/')+1:]
	bin := filepath.Join(dir, name)
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("shardproc: building %s: %v\n%s", name, err, out)
	}
	return bin, nil
}

// BuildAt builds shardd as it was at commit of the repository at root
// into dir (the commit's tree unpacked with git archive, then built with
// its own go.mod) and returns the binary's path: a previous release, for a
// test of a fleet of two versions. It needs the commit in root's history
// (a shallow clone may not have it; the error says so).
func BuildAt(dir, root, commit string) (string, error) {
	src := filepath.Join(dir, "src-"+commit)
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	untar.Stdin = pipe
	var archiveErr strings.Builder
	archive.Stderr = &archiveErr
	if err := untar.Start(); err != nil {
		return "", fmt.Errorf("shardproc: tar: %w", err)
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return "", fmt.Errorf("shardproc: git archive %s in %s: %v: %s (a shallow clone lacks old commits: git fetch --unshallow)", commit, root, err, archiveErr.String())
	}
	if err := untar.Wait(); err != nil {
		return "", fmt.Errorf("shardproc: unpacking %s: %w", commit, err)
	}
	bin := filepath.Join(dir, "shardd-"+commit)
	build := exec.Command("go", "build", "-o", bin, "./cmd/shardd")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("shardproc: building shardd at %s: %v\n%s", commit, err, out)
	}
	return bin, nil
}

// Proc is one running (or exited) process.
type Proc struct {
	cmd    *exec.Cmd
	exited chan struct{}

	mu     sync.Mutex
	exitAt time.Time
	err    error
}

// Start runs bin with args, its stdout and stderr appended to logPath. The
// environment is the test's without CONSUL_* (a process gets its agent
// from its flags), plus env.
func Start(bin string, args []string, logPath string, env ...string) (*Proc, error) {
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONSUL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return Launch(cmd, logPath)
}

// Launch starts cmd, prepared by the caller (its environment and process
// attributes), with its stdout and stderr appended to logPath, and waits
// for it on one goroutine. It is how every child process of the tests is
// started: shardd here, the Consul agents of internal/harness/consultest, the
// nats-servers of internal/harness/natstest (PostgreSQL is started by
// internal/pgserver, which the product links, so it has its own). The caller must not call
// cmd.Wait itself.
func Launch(cmd *exec.Cmd, logPath string) (*Proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("shardproc: %w", err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("shardproc: starting %s: %w", strings.Join(cmd.Args, " "), err)
	}
	p := &Proc{cmd: cmd, exited: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		logf.Close()
		p.mu.Lock()
		p.exitAt, p.err = time.Now(), err
		p.mu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.exited }

// Signal sends sig unless the process has exited.
func (p *Proc) Signal(sig syscall.Signal) {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

// Wait waits up to d for the process to exit and reports whether it did.
func (p *Proc) Wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// Running reports whether the process has not exited yet.
func (p *Proc) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Exit returns when the process exited and how (nil: exit status 0).
func (p *Proc) Exit() (time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitAt, p.err
}

// Stop continues the process if it was stopped (SIGSTOP), asks it to drain
// (SIGTERM), and kills it if it has not exited within d.
func (p *Proc) Stop(d time.Duration) error {
	p.Signal(syscall.SIGCONT)
	p.Signal(syscall.SIGTERM)
	if p.Wait(d) {
		return nil
	}
	p.Signal(syscall.SIGKILL)
	p.Wait(5 * time.Second)
	return fmt.Errorf("shardproc: pid %d still running %v after SIGTERM; killed", p.cmd.Process.Pid, d)
}

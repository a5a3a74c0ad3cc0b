package shardproc

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartExitAndLog(t *testing.T) {
	t.Setenv("CONSUL_HTTP_ADDR", "leaked:8500")
	log := filepath.Join(t.TempDir(), "p.log")
	p, err := Start("/bin/sh", []string{"-c", `echo "addr=$CONSUL_HTTP_ADDR extra=$EXTRA"; exit 3`}, log, "EXTRA=yes")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Wait(10 * time.Second) {
		t.Fatal("still running after 10 s")
	}
	if p.Running() {
		t.Error("Running after it exited")
	}
	if at, err := p.Exit(); at.IsZero() || err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Exit = %v, %v; want exit status 3", at, err)
	}
	b, _ := os.ReadFile(log)
	if got := strings.TrimSpace(string(b)); got != "addr= extra=yes" {
		t.Errorf("output %q: the CONSUL_ setting leaked or env was not added", got)
	}
}

func TestStopAndSignal(t *testing.T) {
	p, err := Start("/bin/sleep", []string{"30"}, filepath.Join(t.TempDir(), "p.log"))
	if err != nil {
		t.Fatal(err)
	}
	p.Signal(syscall.SIGSTOP)
	if p.Wait(100 * time.Millisecond) {
		t.Fatal("exited on SIGSTOP")
	}
	// Stopped: Stop continues it first, so SIGTERM takes effect.
	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exit(); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("Exit = %v, want terminated by SIGTERM", err)
	}
	p.Signal(syscall.SIGKILL) // no-op once exited
}

func TestStartMissingBinary(t *testing.T) {
	if _, err := Start(filepath.Join(t.TempDir(), "nope"), nil, filepath.Join(t.TempDir(), "p.log")); err == nil {
		t.Fatal("Start of a missing binary succeeded")
	}
}

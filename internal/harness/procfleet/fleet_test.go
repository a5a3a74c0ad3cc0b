package procfleet

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWorkerLives: a worker's process is killed and started again under
// its ID, each process is a life with its start and exit, a second
// process while one runs is refused, the start lines of its history are
// followed, and a stop ends it with SIGTERM.
func TestWorkerLives(t *testing.T) {
	// sh -c SCRIPT --id ID --history PATH: $3 is the history.
	script := `echo '{"phase":"start","shard":"s/a","at":'"$(date +%s%N)"'}' >> "$3"; trap 'exit 0' TERM; while :; do sleep 0.05; done`
	f, err := New(Config{Bin: "/bin/sh", Dir: t.TempDir(), Args: []string{"-c", script}, FollowStarts: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop(5 * time.Second) })
	t0 := time.Now()
	w, err := f.Add("w01")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Add("w01"); err == nil {
		t.Error("a worker added twice")
	}
	waitStarted(t, f, t0)
	if err := w.Start(); err == nil || !strings.Contains(err.Error(), "running") {
		t.Errorf("a second process while one runs: %v", err)
	}
	if err := w.Kill(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	<-w.Done()
	if w.Running() {
		t.Fatal("running after Kill")
	}
	t1 := time.Now()
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	waitStarted(t, f, t1)
	w.Signal(syscall.SIGSTOP)
	if err := w.Stop(5 * time.Second); err != nil { // SIGCONT first, then SIGTERM
		t.Errorf("stop of a stopped worker: %v", err)
	}
	lives := f.Lives()["w01"]
	if len(lives) != 2 || lives[0].Exit.IsZero() || lives[1].Exit.IsZero() || !lives[0].Exit.Before(lives[1].Start) {
		t.Errorf("lives %+v, want two, each ended, the second after the first", lives)
	}
	if got := f.HistoryFiles(); len(got) != 1 || got[0] != w.History {
		t.Errorf("history files %v, want [%s]", got, w.History)
	}
}

// waitStarted waits until the worker's start line of s/a after t0 has been
// followed.
func waitStarted(t *testing.T, f *Fleet, t0 time.Time) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := f.Starts().Last([]string{"s/a"}, t0); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no start line of s/a after %v followed: %s", t0, f.Starts().NotStarted([]string{"s/a"}, t0))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

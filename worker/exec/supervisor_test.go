package exec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/worker"
)

// A child that says when it gets SIGTERM, and stops then.
const politeChild = `trap 'echo got TERM; exit 0' TERM; echo up pgid=$$; while :; do sleep 0.1; done`

// A child that ignores SIGTERM, and so do the sleeps it starts.
const stubbornChild = `trap '' TERM; echo up pgid=$$; while :; do sleep 0.1; done`

// TestProcessSignalsByCause: revoked, the child gets SIGTERM and may clean
// up; lost, it gets SIGKILL at once without a chance to act. Either way
// Process returns nil only after the child is gone.
func TestProcessSignalsByCause(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cause    error
		wantTERM bool
		wantLog  string
	}{
		{"revoked", fmt.Errorf("%w: rebalance", worker.ErrRevoked), true, "child stopped"},
		{"lost", fmt.Errorf("%w: session expired", worker.ErrLost), false, "shard lost: child killed at once (SIGKILL)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSupervised(t, time.Minute, politeChild)
			cancel, done := s.start(t)
			waitUntil(t, 10*time.Second, "the child is up", func() bool { return strings.Contains(s.out.String(), "[s-000] up") })
			pgid := pgidOf(t, s.out.String())
			began := time.Now()
			cancel(tc.cause)
			if err := <-done; err != nil {
				t.Errorf("Process = %v, want nil once the claim ended", err)
			}
			if took := time.Since(began); took > 3*time.Second {
				t.Errorf("Process took %v to end the child", took)
			}
			if got := strings.Contains(s.out.String(), "[s-000] got TERM"); got != tc.wantTERM {
				t.Errorf("child saw SIGTERM: %v, want %v; output:\n%s", got, tc.wantTERM, s.out.String())
			}
			if s.logged(tc.wantLog) != 1 {
				t.Errorf("no %q in the log", tc.wantLog)
			}
			groupEnds(t, pgid)
		})
	}
}

// TestProcessKillsAChildThatIgnoresSIGTERMAfterTheGrace: revoked, a child
// that ignores SIGTERM gets SIGKILL once DrainGrace has passed, not before,
// and so does everything in its process group.
func TestProcessKillsAChildThatIgnoresSIGTERMAfterTheGrace(t *testing.T) {
	const grace = 300 * time.Millisecond
	s := newSupervised(t, grace, `sleep 60 & `+stubbornChild)
	cancel, done := s.start(t)
	waitUntil(t, 10*time.Second, "the child is up", func() bool { return strings.Contains(s.out.String(), "[s-000] up") })
	pgid := pgidOf(t, s.out.String())
	began := time.Now()
	cancel(worker.ErrRevoked)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Process = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the child outlived a %v grace by 10s", grace)
	}
	if took := time.Since(began); took < grace || took > 5*time.Second {
		t.Errorf("Process returned %v after the revoke; want the %v grace, then SIGKILL", took, grace)
	}
	if s.logged("drain grace passed: SIGKILL sent") != 1 {
		t.Errorf("the log does not say the grace passed: %v", s.logs.All())
	}
	groupEnds(t, pgid)
}

// TestProcessReportsAChildThatExits: a child that exits while its shard is
// owned makes Process return an error naming its exit, at once, so the
// worker restarts it; what it left in its group is killed.
func TestProcessReportsAChildThatExits(t *testing.T) {
	for _, tc := range []struct {
		script, exit string
	}{
		{`echo pgid=$$; exit 3`, "exit status 3"},
		{`echo pgid=$$; exit 0`, "exit status 0"},
		{`sleep 60 </dev/null >/dev/null 2>&1 & echo pgid=$$`, "exit status 0"},
	} {
		s := newSupervised(t, time.Minute, tc.script)
		_, done := s.start(t)
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%q: Process still running 10s after its child exited", tc.script)
		}
		if !errors.Is(err, ErrChildExited) || !strings.Contains(err.Error(), tc.exit) || !strings.Contains(err.Error(), "s-000") {
			t.Errorf("%q: Process = %v, want ErrChildExited naming the shard and %q", tc.script, err, tc.exit)
		}
		groupEnds(t, pgidOf(t, s.out.String()))
	}
}

// TestProcessPrefixesTheChildsOutput: each line of the child's stdout and
// stderr is prefixed with its shard, and a last line without a newline is
// not lost.
func TestProcessPrefixesTheChildsOutput(t *testing.T) {
	s := newSupervised(t, time.Minute, `echo one; echo two >&2; printf three; exit 1`)
	_, done := s.start(t)
	<-done
	got := s.out.String()
	for _, want := range []string{"[s-000] one\n", "[s-000] two\n", "[s-000] three\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output %q lacks %q", got, want)
		}
	}
	if n := strings.Count(got, "\n"); n != 3 {
		t.Errorf("output has %d lines, want 3: %q", n, got)
	}
}

// TestProcessRefusesAShardOutsideTheFleet: a claim on a shard the Config's
// fleet does not have is a wrong Config; no child is started for it.
func TestProcessRefusesAShardOutsideTheFleet(t *testing.T) {
	s := newSupervised(t, time.Minute, `echo started`)
	err := s.Process(t.Context(), &worker.Claim{Claim: shardClaim("other-000", 1), Worker: "w"})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `"other-000"`) {
		t.Errorf("Process = %v, want ErrInvalidConfig naming the shard", err)
	}
	if s.out.String() != "" {
		t.Errorf("a child ran: %q", s.out.String())
	}
}

// TestKillAllKillsEveryChildAndStartsNoMore: KillAll SIGKILLs every child
// (one that ignores SIGTERM included) and a Process called afterwards
// starts nothing and waits for its claim to end.
func TestKillAllKillsEveryChildAndStartsNoMore(t *testing.T) {
	s := newSupervised(t, time.Minute, stubbornChild)
	_, done := s.start(t)
	waitUntil(t, 10*time.Second, "the child is up", func() bool { return strings.Contains(s.out.String(), "[s-000] up") })
	pgid := pgidOf(t, s.out.String())
	if n := s.KillAll(); n != 1 {
		t.Errorf("KillAll = %d, want 1 child", n)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrChildExited) || !strings.Contains(err.Error(), "killed") {
			t.Errorf("Process = %v, want ErrChildExited: killed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the child outlived KillAll by 5s")
	}
	groupEnds(t, pgid)
	cancel, again := s.start(t)
	select {
	case err := <-again:
		t.Fatalf("Process after KillAll returned %v before its claim ended", err)
	case <-time.After(200 * time.Millisecond):
	}
	cancel(worker.ErrRevoked)
	if err := <-again; err != nil {
		t.Errorf("Process after KillAll = %v, want nil", err)
	}
	if n := strings.Count(s.out.String(), "up pgid="); n != 1 {
		t.Errorf("%d children started, want only the one before KillAll", n)
	}
}

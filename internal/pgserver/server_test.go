package pgserver

import (
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/harness/freeporttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// other launches a cluster for the test whose port the test's own cluster
// is then told to use, as when two programs draw the same port.
func other(t *testing.T) *Server {
	t.Helper()
	o, err := Launch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Close(); err != nil {
			t.Error(err)
		}
	})
	return o
}

// TestLaunchRetriesATakenPort: a port taken between the pick and the bind,
// here by another cluster, costs one attempt, and the other cluster is not
// taken for the new one; the next attempt, on a fresh port, starts the
// cluster, and its log says why the first failed.
func TestLaunchRetriesATakenPort(t *testing.T) {
	r := &freeporttest.Rigged{Taken: other(t).Port, Times: 1}
	s, err := launchWith(r.Pick)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	if r.Calls() != 2 || s.Port == r.Taken {
		t.Errorf("%d port picks, cluster on port %d (taken: %d); want 2 picks and another port", r.Calls(), s.Port, r.Taken)
	}
	if err := s.Exec(t.Context(), "postgres", "SELECT 1"); err != nil {
		t.Errorf("the cluster on port %d does not answer: %v", s.Port, err)
	}
	if log := s.LogTail(100); !strings.Contains(log, "Address already in use") {
		t.Errorf("the log does not say the first port was taken:\n%s", log)
	}
}

// TestLaunchGivesUp: a cluster whose every port is taken fails after
// attempts tries, with an error that quotes its log.
func TestLaunchGivesUp(t *testing.T) {
	r := &freeporttest.Rigged{Taken: other(t).Port, Times: attempts}
	s, err := launchWith(r.Pick)
	if err == nil {
		s.Close()
		t.Fatalf("a cluster started on taken port %d", r.Taken)
	}
	if r.Calls() != attempts {
		t.Errorf("%d port picks, want %d", r.Calls(), attempts)
	}
	if msg := err.Error(); !strings.Contains(msg, "Address already in use") || !strings.Contains(msg, fmt.Sprintf("in %d attempts", attempts)) {
		t.Errorf("error does not quote the bind failure and the attempts:\n%s", msg)
	}
}

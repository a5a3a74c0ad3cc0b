package natstest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/harness/freeporttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestLaunchRetriesATakenPort: a port taken between the pick and the bind,
// here by another nats-server (as when two tests draw the same port), costs
// one attempt, and the other server is not taken for the new one; the
// next attempt, on a fresh port, starts a server that answers, and the log
// says why the first failed.
func TestLaunchRetriesATakenPort(t *testing.T) {
	other := Start(t)
	busy := portOf(t, other)
	r := &freeporttest.Rigged{Taken: busy, Times: 1}
	s, err := launch(r.Pick)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	if r.Calls() != 2 {
		t.Errorf("%d port picks, want 2 (a failed attempt, then a good one)", r.Calls())
	}
	if s.URL == other.URL {
		t.Fatalf("Launch returned %s, the other server's", s.URL)
	}
	if err := ping(s.URL, s.name); err != nil {
		t.Errorf("server at %s does not answer: %v", s.URL, err)
	}
	log, err := os.ReadFile(s.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("127.0.0.1:%d: bind: address already in use", busy); !strings.Contains(string(log), want) {
		t.Errorf("log does not say %q:\n%s", want, tail(log, 2000))
	}
}

// TestLaunchGivesUp: a server whose every port is taken fails after
// attempts tries, with an error that quotes its log.
func TestLaunchGivesUp(t *testing.T) {
	busy := portOf(t, Start(t))
	r := &freeporttest.Rigged{Taken: busy, Times: attempts}
	s, err := launch(r.Pick)
	if err == nil {
		s.Close()
		t.Fatalf("a server started on taken port %d", busy)
	}
	if r.Calls() != attempts {
		t.Errorf("%d port picks, want %d", r.Calls(), attempts)
	}
	if msg := err.Error(); !strings.Contains(msg, "address already in use") || !strings.Contains(msg, fmt.Sprintf("in %d attempts", attempts)) {
		t.Errorf("error does not quote the bind failure and the attempts:\n%s", msg)
	}
}

// portOf is the port s listens on, from its URL.
func portOf(t *testing.T, s *Server) int {
	t.Helper()
	p, err := strconv.Atoi(s.URL[strings.LastIndexByte(s.URL, ':')+1:])
	if err != nil {
		t.Fatalf("no port in %s: %v", s.URL, err)
	}
	return p
}

package consultest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/freeporttest"
	"github.com/shardlease/shardlease/internal/harness/tb"
)

// TestDevStartNamesBindFailure: a dev agent whose Serf LAN port is taken
// for UDP on every attempt is tried three times, and the error names each
// attempt's agent and quotes its log's bind error.
func TestDevStartNamesBindFailure(t *testing.T) {
	r := &freeporttest.Rigged{Taken: occupy(t, "udp"), At: 1, Times: attempts}
	a, retried, err := launchDev(Binary(t), t.TempDir(), nil, r.Pick)
	if err == nil {
		t.Fatal("the dev agent started on a busy Serf port")
	}
	if r.Calls() != attempts || len(retried) != 0 {
		t.Errorf("%d port draws and %d retried failures returned; want %d and none (all in the error)", r.Calls(), len(retried), attempts)
	}
	var f *startFailure
	if !errors.As(err, &f) {
		t.Fatalf("error %v is not a start failure", err)
	}
	msg := err.Error()
	busy := fmt.Sprintf("127.0.0.1:%d", r.Taken)
	for _, want := range []string{"attempt 1 of 3", "attempt 3 of 3", a.Name, busy, "bind: address already in use"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not mention %q:\n%s", want, msg)
		}
	}
	if a.Running() {
		t.Errorf("%s still running after a failed start", a.Name)
	}
}

// TestClusterStartRetries: a cluster start whose first attempt finds one
// server's Serf WAN port taken (CI lost a cluster so) comes up on fresh
// ports, and says in the test's log why it retried.
func TestClusterStartRetries(t *testing.T) {
	r := &freeporttest.Rigged{Taken: occupy(t, "tcp"), At: portsPerAgent + 2, Times: 1}
	rec := &recorder{T: t}
	began := time.Now()
	c := startCluster(rec, 3, r.Pick)
	// The failed attempt has 90 s to get ready; a start that took most of
	// that waited on the servers left instead of seeing server1 exit.
	if d := time.Since(began); d > 60*time.Second {
		t.Errorf("the start took %v: the failed attempt was not abandoned when its server exited", d)
	}
	if r.Calls() != 2 {
		t.Errorf("%d port draws, want 2 (a failed attempt, then a good one)", r.Calls())
	}
	for _, a := range c.Agents {
		if !a.Running() || a.ports[2] == r.Taken {
			t.Errorf("%s running %v on ports %v (busy %d)", a.Name, a.Running(), a.ports, r.Taken)
		}
	}
	logs := rec.String()
	for _, want := range []string{"retrying with fresh ports", "attempt 1 of 3", "consultest-server1-", "bind: address already in use"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the test's log does not mention %q:\n%s", want, logs)
		}
	}
	if l := c.Leader(t); l == nil {
		t.Fatal("no leader")
	}
}

// recorder is a tb.T that keeps what is logged through it.
type recorder struct {
	tb.T
	mu   sync.Mutex
	logs strings.Builder
}

func (r *recorder) Logf(format string, args ...any) {
	r.T.Logf(format, args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(&r.logs, format+"\n", args...)
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

package fleettest

import (
	"fmt"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/shard"
)

// The fleet tests' lease policy: check liveness (the default) with a 4 s
// check TTL, renewals every 500 ms, 2 s pause budget (a worker steps down
// after 2 s without a successful renewal: sturdy enough for a loaded CI
// machine running other packages' Consul agents beside these), and a 2 s
// lock-delay, the least the policy's rule allows (ttl − pause budget).
const (
	checkTTL  = 4 * time.Second
	lockDelay = 2 * time.Second
	// failoverMargin is what a crash's failover may take beyond the check's
	// TTL: the lock-delay, the assignor's listing, the new owner's acquire
	// (refused during the lock-delay, retried at its end) and scheduling on
	// a busy two-core machine.
	failoverMargin = lockDelay + 3*time.Second
)

var policyArgs = []string{"--ttl", "4s", "--renew", "500ms", "--pause-budget", "2s",
	"--lock-delay", "2s", "--commit-every", "500ms"}

const (
	fleetWorkers = 6
	fleetShards  = 64
)

// TestFleetOnConsul runs 6 `shardd worker` processes over 64 shards on a dev
// agent: they converge to max−min ≤ 1; foreign and malformed keys written
// with the consul CLI are logged and ignored; a shard key deleted by an
// operator is seen lost and taken again with a higher token; a SIGKILLed
// worker's shards are owned by others within the check TTL plus a margin,
// with higher tokens; a SIGTERMed worker's shards are owned by others
// within one second. A separate client checks every snapshot throughout,
// and afterwards no two processes' handler intervals overlap on a shard.
func TestFleetOnConsul(t *testing.T) {
	agent := consultest.StartDev(t)
	prefix := "fleettest/" + randomName()
	mon := newMonitor(t, prefix, fleetShards, agent.Client(t))
	var procs []*proc
	exempt := map[shard.ID]bool{}
	t.Cleanup(func() { // runs after every worker has been stopped
		mon.close()
		checkIntervals(t, procs, exempt)
	})

	byID := map[string]*proc{}
	for i := range fleetWorkers {
		id := fmt.Sprintf("w%d", i+1)
		p := startWorker(t, id, workerArgs(agent.HTTPAddr, prefix, id, fleetShards, policyArgs...))
		procs = append(procs, p)
		byID[id] = p
	}
	converge(t, mon, fleetWorkers, 30*time.Second)

	t.Run("ForeignAndMalformedKeys", func(t *testing.T) {
		before := mon.snapshot()
		var victim shard.ID
		for id, st := range before.shards {
			if st.session != "" && (victim == "" || id < victim) {
				victim = id
			}
		}
		owner := `{"worker":"intruder","reason":"initial: never owned","since":"2025-01-01T00:00:00Z"}`
		for k, v := range map[string]string{
			prefix + "/foreign":                     "hello",
			prefix + "/shards/not-a-shard":          owner,
			prefix + "/members/ghost":               "[]",
			prefix + "/shards/" + string(victim):    "{overwritten", // malformed value on a held shard
			prefix + "/somewhere/deep/in/the/tree/": owner,
		} {
			agent.CLI(t, "kv", "put", k, v)
		}
		// Only the assignor lists the fleet (protocol 2), so it alone
		// reports them.
		deadline := time.Now().Add(10 * time.Second)
		var reported []logLine
		for len(reported) == 0 && time.Now().Before(deadline) {
			for _, p := range procs {
				reported = append(reported, p.find("the coordinator reports a problem under the fleet prefix")...)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(reported) == 0 {
			t.Errorf("no worker (the assignor) logged the foreign keys within 10 s")
		}
		for _, l := range reported {
			if l.Level != "warn" {
				t.Errorf("the foreign key was logged at level %q, want warn", l.Level)
			}
		}
		time.Sleep(time.Second) // give a wrong reaction time to happen
		after := mon.snapshot()
		for id, st := range before.shards {
			if after.shards[id].session != st.session {
				t.Errorf("%s changed hands after foreign keys were written: session %s → %s", id, st.session, after.shards[id].session)
			}
		}
		for _, p := range procs {
			if !p.running() {
				t.Errorf("%s exited after foreign keys were written", p.id)
			}
		}
		if _, ok := after.members["intruder"]; ok {
			t.Errorf("a foreign value became a member")
		}
	})

	t.Run("OperatorDeletesOwnedShard", func(t *testing.T) {
		before := mon.snapshot()
		h := before.holders()
		var id shard.ID
		for sh, st := range before.shards {
			if _, ok := h[st.session]; ok && (id == "" || sh > id) {
				id = sh
			}
		}
		st := before.shards[id]
		owner := byID[h[st.session]]
		exempt[id] = true
		agent.CLI(t, "kv", "delete", prefix+"/shards/"+string(id))
		lost := owner.waitLog(t, "shard lost", 10*time.Second)
		if lost.Shard != string(id) {
			t.Errorf("%s lost %s, want %s", owner.id, lost.Shard, id)
		}
		took, ok := eventually(t.Context(), 15*time.Second, func() bool {
			now := mon.snapshot().shards[id]
			_, live := mon.snapshot().holders()[now.session]
			return live && now.token > st.token
		})
		now := mon.snapshot()
		if !ok {
			t.Fatalf("%s not owned again with a token above %d within %v: %+v", id, st.token, took, now.shards[id])
		}
		t.Logf("%s deleted under %s (token %d): %s saw it lost; owned again by %s with token %d after %v",
			id, owner.id, st.token, owner.id, now.holders()[now.shards[id].session], now.shards[id].token, took.Round(time.Millisecond))
	})

	t.Run("Kill9", func(t *testing.T) {
		before := mon.snapshot()
		victim := busiest(before, byID)
		sess, owned := before.ownedBy(victim.id)
		killed := time.Now()
		victim.kill9(t)
		bound := checkTTL + failoverMargin
		took, ok := eventually(t.Context(), bound+10*time.Second, func() bool {
			return takenOver(mon.snapshot(), sess, owned) == ""
		})
		if !ok {
			t.Fatalf("%d shards of SIGKILLed %s not all owned by others with higher tokens after %v: %s",
				len(owned), victim.id, took, takenOver(mon.snapshot(), sess, owned))
		}
		t.Logf("SIGKILL %s (%d shards): all owned by others with higher tokens %v after the kill (bound: check TTL %v + %v)",
			victim.id, len(owned), took.Round(time.Millisecond), checkTTL, failoverMargin)
		if took > bound {
			t.Errorf("failover took %v, more than the check TTL %v plus %v", took, checkTTL, failoverMargin)
		}
		_ = killed
		converge(t, mon, fleetWorkers-1, 20*time.Second)
	})

	t.Run("SIGTERM", func(t *testing.T) {
		before := mon.snapshot()
		var leaver *proc
		for _, p := range procs {
			if p.running() {
				if leaver == nil || len(ownedOf(before, p.id)) > len(ownedOf(before, leaver.id)) {
					leaver = p
				}
			}
		}
		sess, owned := before.ownedBy(leaver.id)
		leaver.signal(syscall.SIGTERM)
		took, ok := eventually(t.Context(), 10*time.Second, func() bool {
			return takenOver(mon.snapshot(), sess, owned) == ""
		})
		if !ok {
			t.Fatalf("%d shards of SIGTERMed %s not all owned by others after %v: %s", len(owned), leaver.id, took, takenOver(mon.snapshot(), sess, owned))
		}
		t.Logf("SIGTERM %s (%d shards): all owned by others %v later", leaver.id, len(owned), took.Round(time.Millisecond))
		if took > time.Second {
			t.Errorf("hand-off after SIGTERM took %v, want within 1s", took)
		}
		if !leaver.wait(10 * time.Second) {
			t.Fatalf("%s still running 10 s after SIGTERM", leaver.id)
		}
		if _, err := leaver.exit(); err != nil {
			t.Errorf("%s exited with %v after SIGTERM, want status 0", leaver.id, err)
		}
		leaver.waitLog(t, "stopped: every shard released", time.Second)
		converge(t, mon, fleetWorkers-2, 20*time.Second)
	})
}

// converge waits until want live workers own every shard within one of
// each other.
func converge(t *testing.T, mon *monitor, want int, within time.Duration) {
	t.Helper()
	took, ok := eventually(t.Context(), within, func() bool { return mon.snapshot().converged(fleetShards, want) })
	counts, owned := mon.snapshot().counts()
	if !ok {
		t.Fatalf("not converged within %v: %d of %d shards owned by live workers, counts %v (want %d workers, max−min ≤ 1)",
			within, owned, fleetShards, counts, want)
	}
	t.Logf("%d workers own all %d shards, max−min %d, after %v: %v", want, fleetShards, spread(counts), took.Round(time.Millisecond), counts)
}

// takenOver returns "" when every shard in owned (with its token then) is
// held by a live session other than old with a higher token, else what is
// still missing.
func takenOver(s fleetSnap, old string, owned map[shard.ID]uint64) string {
	h := s.holders()
	var missing []string
	for id, tok := range owned {
		st := s.shards[id]
		if _, live := h[st.session]; !live || st.session == old || st.token <= tok {
			missing = append(missing, fmt.Sprintf("%s(session %.8s token %d, was %d)", id, st.session, st.token, tok))
		}
	}
	sort.Strings(missing)
	return strings.Join(missing, " ")
}

func ownedOf(s fleetSnap, id string) map[shard.ID]uint64 {
	_, owned := s.ownedBy(id)
	return owned
}

// busiest returns the running worker that owns the most shards.
func busiest(s fleetSnap, procs map[string]*proc) *proc {
	var best *proc
	ids := make([]string, 0, len(procs))
	for id := range procs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		p := procs[id]
		if p.running() && (best == nil || len(ownedOf(s, id)) > len(ownedOf(s, best.id))) {
			best = p
		}
	}
	return best
}

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consultest"
)

// Kind is a kind of fault.
type Kind string

// The fault kinds.
const (
	SigStop    Kind = "sigstop"          // SIGSTOP past the TTL, then SIGCONT
	Kill9      Kind = "kill-9"           // SIGKILL, then a restart under the same ID
	Partition  Kind = "partition"        // cut off from Consul, not from PostgreSQL
	SlowRenew  Kind = "slow-renewals"    // latency on the renewal calls
	FailRenew  Kind = "failing-renewals" // HTTP 500 on the renewal calls
	LeaderKill Kind = "leader-kill"      // the Raft leader SIGKILLed, then restarted
)

// WorkerKinds are the faults injected into one worker at a time.
var WorkerKinds = []Kind{SigStop, Kill9, Partition, SlowRenew, FailRenew}

// Timing is how long faults last, from the lease's TTL.
type Timing struct {
	// TTL is the workers' session TTL: a pause, partition or failing
	// renewals last past it, so the session is lost.
	TTL time.Duration
	// Settle is how long a worker is left alone after a fault healed
	// before it can be picked again.
	Settle time.Duration
}

// RunWorkerFaults injects perKind faults of each of WorkerKinds, in a
// random order, lanes at a time on distinct workers (lanes must be below
// the number of workers), and returns them in the order they started. It
// stops early, returning what was injected, when ctx ends.
func (f *Fleet) RunWorkerFaults(ctx context.Context, perKind, lanes int, seed uint64, tm Timing) []Fault {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var plan []Kind
	for range perKind {
		plan = append(plan, WorkerKinds...)
	}
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	lanes = max(1, min(lanes, len(f.Workers)-1))

	var mu sync.Mutex // guards next, busy, healed, faults and rng
	next, busy, healed := 0, map[*Worker]bool{}, map[*Worker]time.Time{}
	var faults []Fault
	pick := func() (Kind, *Worker, time.Duration, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next == len(plan) || ctx.Err() != nil {
			return "", nil, 0, false
		}
		// The idle worker that recovered longest ago: it has had the most
		// time to win shards back, so the fault has something to take.
		var w *Worker
		for _, c := range f.Workers {
			if !busy[c] && (w == nil || healed[c].Before(healed[w])) {
				w = c
			}
		}
		busy[w] = true
		k := plan[next]
		next++
		// Per-fault randomness, drawn under the lock: the hold of slow
		// renewals and the downtime of a killed worker.
		return k, w, time.Duration(rng.Int64N(int64(2 * time.Second))), true
	}
	var wg sync.WaitGroup
	for lane := range lanes {
		wg.Go(func() {
			// Staggered, so the lanes' faults do not start in step.
			sleepCtx(ctx, time.Duration(lane)*(tm.TTL+tm.Settle)/time.Duration(lanes))
			for {
				k, w, jitter, ok := pick()
				if !ok {
					return
				}
				ft := f.inject(ctx, k, w, jitter, tm)
				sleepCtx(ctx, tm.Settle)
				mu.Lock()
				faults = append(faults, ft)
				busy[w] = false
				healed[w] = time.Now()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	sortFaults(faults)
	return faults
}

// inject runs one fault on w, from injection to heal.
func (f *Fleet) inject(ctx context.Context, k Kind, w *Worker, jitter time.Duration, tm Timing) Fault {
	ft := Fault{Kind: k, Target: w.ID, Start: time.Now()}
	past := tm.TTL + time.Second // past the TTL: the session is lost
	switch k {
	case SigStop:
		w.signal(syscall.SIGSTOP)
		sleepCtx(ctx, past)
		w.signal(syscall.SIGCONT)
	case Kill9:
		if err := w.kill9(); err != nil {
			ft.Err = err.Error()
			break
		}
		sleepCtx(ctx, time.Second+jitter)
		if err := w.start(); err != nil {
			ft.Err = err.Error()
		}
	case Partition:
		w.Proxy.Set(ModePartition, 0)
		sleepCtx(ctx, past)
		w.Proxy.Set(ModePass, 0)
	case SlowRenew:
		// Between a quarter of the TTL (renewals late, the session kept)
		// and three quarters (beyond the pause budget: the worker steps
		// down), for two TTLs.
		delay := tm.TTL/4 + time.Duration(float64(tm.TTL/2)*float64(jitter)/float64(2*time.Second))
		ft.Detail = delay.Round(time.Millisecond).String()
		w.Proxy.Set(ModeSlowRenewals, delay)
		sleepCtx(ctx, 2*tm.TTL)
		w.Proxy.Set(ModePass, 0)
	case FailRenew:
		w.Proxy.Set(ModeFailRenewals, 0)
		sleepCtx(ctx, past)
		w.Proxy.Set(ModePass, 0)
	default:
		ft.Err = fmt.Sprintf("chaos: no worker fault %q", k)
	}
	ft.End = time.Now()
	return ft
}

// RunLeaderKills kills the Raft leader of cl n times (SIGKILL), each time
// waiting for the others to elect a new one, restarting the killed server
// and waiting until every server is a healthy voter again, then settle. It
// calls t.Fatal when the cluster does not recover, so it must run on the
// test's goroutine.
//
// Autopilot is told first not to remove dead servers: by default it removes
// the killed one from the Raft configuration and, once restarted, keeps it
// a non-voter for its stabilization time (10 s), so a second leader kill
// within that time leaves one voter of three and no leader at all.
func RunLeaderKills(ctx context.Context, t testing.TB, cl *consultest.Cluster, n int, settle time.Duration) []Fault {
	t.Helper()
	var ops []*api.Operator
	for _, a := range cl.Agents {
		ops = append(ops, a.Client(t).Operator())
	}
	op := cl.Leader(t).Client(t).Operator()
	if err := op.AutopilotSetConfiguration(&api.AutopilotConfiguration{CleanupDeadServers: false,
		LastContactThreshold: api.NewReadableDuration(200 * time.Millisecond), MaxTrailingLogs: 250,
		ServerStabilizationTime: api.NewReadableDuration(time.Second)}, nil); err != nil {
		t.Fatalf("chaos: configuring autopilot: %v", err)
	}
	var faults []Fault
	for range n {
		if ctx.Err() != nil {
			break
		}
		leader := cl.Leader(t)
		ft := Fault{Kind: LeaderKill, Target: leader.Name, Start: time.Now()}
		leader.Kill(t)
		next := cl.Leader(t)
		ft.Detail = fmt.Sprintf("%s elected in %v", next.Name, time.Since(ft.Start).Round(time.Millisecond))
		leader.Restart(t)
		if err := allVoters(ctx, ops, time.Minute); err != nil {
			t.Fatalf("chaos: after restarting %s: %v", leader.Name, err)
		}
		ft.End = time.Now()
		faults = append(faults, ft)
		sleepCtx(ctx, settle)
	}
	return faults
}

// allVoters waits until every server (one Operator client each) is a
// healthy Raft voter, asking each in turn.
func allVoters(ctx context.Context, ops []*api.Operator, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last error
	for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		op := ops[i%len(ops)]
		q := (&api.QueryOptions{}).WithContext(ctx)
		cfg, err := op.RaftGetConfiguration(q)
		if err == nil {
			voters := 0
			for _, s := range cfg.Servers {
				if s.Voter {
					voters++
				}
			}
			var h *api.OperatorHealthReply
			if h, err = op.AutopilotServerHealth(q); err == nil {
				if voters == len(ops) && h.Healthy {
					return nil
				}
				err = fmt.Errorf("%d voters of %d servers, healthy %v", voters, len(ops), h.Healthy)
			}
		}
		last = err
		sleepCtx(ctx, 200*time.Millisecond)
	}
	return fmt.Errorf("not every server a healthy voter within %v: %v", within, last)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}

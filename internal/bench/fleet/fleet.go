package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/shard"
)

// Fleet is one system's workers under test, on one fresh KV prefix: the
// scenarios drive shardlease and the baselines through it alike.
type Fleet interface {
	System() string
	// Add starts a worker; it does not wait for it to own anything.
	Add(ctx context.Context, id string) error
	// Crash kills worker id at once: a process fleet sends it SIGKILL; an
	// in-process one makes it look so to Consul (nothing more of it
	// reaches the agent). Its sessions are neither renewed nor destroyed,
	// so Consul invalidates them when their TTL or check runs out. What is
	// left of the worker is reaped in the background.
	Crash(id string)
	// Stop starts a clean stop of worker id (SIGTERM, or what it does) and
	// returns at once; the channel closes when the worker has finished.
	Stop(id string) <-chan struct{}
	// View returns who owns what; with after > 0 it first blocks until the
	// prefix changes past index after (a blocking query).
	View(ctx context.Context, after uint64) (procfleet.View, error)
	// Close stops every remaining worker and releases the observer.
	Close()
	// Starts is when each shard's latest handler started.
	Starts() *procfleet.StartLog
}

// observerSpacing is the least time between two listings by the observer
// of a prefix with largePrefix owned shards or more.
const (
	observerSpacing = 250 * time.Millisecond
	largePrefix     = 1000
)

// ErrNotReached: a fleet did not reach the state waited for in time.
var ErrNotReached = errors.New("not reached")

// WaitFor follows f's views (shard.Follow) until cond holds and returns
// the view that satisfied it and when it was seen, or an error after
// within.
func WaitFor(ctx context.Context, f Fleet, within time.Duration, what string, cond func(procfleet.View) bool) (procfleet.View, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last procfleet.View
	var seen time.Time // when last satisfied cond
	_ = shard.Follow(ctx, f.View, shard.FollowOptions{}, func(v procfleet.View) (time.Time, error) {
		now := time.Now()
		last = v
		if cond(v) {
			seen = now
			return time.Time{}, shard.ErrStopFollowing
		}
		// A large prefix is read at a bounded rate, as the dashboard reads
		// it (fleetview: a listing at most every 250 ms): a listing of
		// 10,000 keys costs Consul tens of milliseconds (docs/benchmarks.md,
		// "Ownership: what the numbers say"), and an observer that listed
		// again on every write would compete with the workers it measures.
		// Times that must be exact come from the workers (StartLog); a
		// small prefix is cheap to read and read at once. Large is judged by
		// the shards seen, so the pause is here rather than Follow's
		// MinSpacing, and it follows the answer, not the start of its
		// read: a blocking query takes as long as nothing changes.
		if len(v.Owners) >= largePrefix {
			t := time.NewTimer(observerSpacing)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}
		return time.Time{}, nil
	})
	if seen.IsZero() {
		return last, time.Time{}, fmt.Errorf("%s: %w: %s within %v (last seen: %d shards owned, %d members, max−min %d)",
			f.System(), ErrNotReached, what, within, len(last.Owners), len(last.Members), last.Spread())
	}
	return last, seen, nil
}

// WorkerID names the i-th worker of a fleet: w01, w02, …
func WorkerID(i int) string { return fmt.Sprintf("w%02d", i) }

// takeWorker removes workers[id] (guarded by mu) and returns it.
func takeWorker[W any](mu *sync.Mutex, workers map[string]W, id string) W {
	mu.Lock()
	defer mu.Unlock()
	w := workers[id]
	delete(workers, id)
	return w
}

// stopEvery stops every worker in workers (guarded by mu) at once and
// waits until all have finished.
func stopEvery[W any](mu *sync.Mutex, workers map[string]W, stop func(id string) <-chan struct{}) {
	mu.Lock()
	ids := make([]string, 0, len(workers))
	for id := range workers {
		ids = append(ids, id)
	}
	mu.Unlock()
	dones := make([]<-chan struct{}, 0, len(ids))
	for _, id := range ids {
		dones = append(dones, stop(id))
	}
	for _, d := range dones {
		<-d
	}
}

// members lists the keys of workers (guarded by mu): the baselines keep no
// member list of their own, so the harness's workers are theirs.
func members[W any](mu *sync.Mutex, workers map[string]W) []string {
	mu.Lock()
	defer mu.Unlock()
	out := make([]string, 0, len(workers))
	for id := range workers {
		out = append(out, id)
	}
	return out
}

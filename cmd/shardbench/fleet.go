package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// fleet is one system's workers under test, on one fresh KV prefix: the
// scenarios drive shardlease and the baseline through it alike.
type fleet interface {
	system() string
	// add starts a worker; it does not wait for it to own anything.
	add(ctx context.Context, id string) error
	// crash kills worker id at once: a process fleet sends it SIGKILL; an
	// in-process one makes it look so to Consul (nothing more of it
	// reaches the agent). Its sessions are neither renewed nor destroyed,
	// so Consul invalidates them when their TTL or check runs out. What is
	// left of the worker is reaped in the background.
	crash(id string)
	// stop starts a clean stop of worker id (SIGTERM, or what it does) and
	// returns at once; the channel closes when the worker has finished.
	stop(id string) <-chan struct{}
	// view returns who owns what; with after > 0 it first blocks until the
	// prefix changes past index after (a blocking query).
	view(ctx context.Context, after uint64) (view, error)
	// close stops every remaining worker and releases the observer.
	close()
	// starts is when each shard's latest handler started.
	starts() *startLog
}

// view is one observation of a fleet.
type view struct {
	index   uint64
	owners  map[string]string // shard → owning worker, held shards only
	members []string          // workers that count for balance (live ones)
}

// counts returns the shards each member owns (zero included).
func (v view) counts() map[string]int {
	c := make(map[string]int, len(v.members))
	for _, m := range v.members {
		c[m] = 0
	}
	for _, w := range v.owners {
		if _, ok := c[w]; ok {
			c[w]++
		}
	}
	return c
}

// spread is max−min of the members' counts.
func (v view) spread() int {
	c := v.counts()
	if len(c) == 0 {
		return 0
	}
	ns := make([]int, 0, len(c))
	for _, n := range c {
		ns = append(ns, n)
	}
	return slices.Max(ns) - slices.Min(ns)
}

// ownedByMembers counts the shards held by a member.
func (v view) ownedByMembers() int {
	c := 0
	for _, n := range v.counts() {
		c += n
	}
	return c
}

// shardsOf lists the shards worker id owns.
func (v view) shardsOf(id string) []string {
	var out []string
	for s, w := range v.owners {
		if w == id {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// observerSpacing is the least time between two listings by the observer
// of a prefix with largePrefix owned shards or more.
const (
	observerSpacing = 250 * time.Millisecond
	largePrefix     = 1000
)

// waitFor watches f until cond holds and returns the view that satisfied
// it and when it was seen, or an error after within.
func waitFor(ctx context.Context, f fleet, within time.Duration, what string, cond func(view) bool) (view, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last view
	var after uint64
	var rest time.Duration
	for {
		// A large prefix is read at a bounded rate, as the dashboard reads
		// it (fleetview: a listing at most every 250 ms): a listing of
		// 10,000 keys costs Consul tens of milliseconds (docs/benchmarks.md,
		// "Ownership: what the numbers say"), and an observer that listed
		// again on every write would compete with the workers it measures.
		// Times that must be exact come from the workers (startLog); a
		// small prefix is cheap to read and read at once. Large is judged by
		// the shards seen, not by how long the call took: a blocking query
		// takes as long as nothing changes.
		select {
		case <-time.After(rest):
		case <-ctx.Done():
		}
		v, err := f.view(ctx, after)
		rest = 0
		if len(v.owners) >= largePrefix {
			rest = observerSpacing
		}
		if err != nil {
			if ctx.Err() != nil {
				return last, time.Time{}, fmt.Errorf("%s: %s not reached within %v (last seen: %d shards owned, %d members, max−min %d)",
					f.system(), what, within, len(last.owners), len(last.members), last.spread())
			}
			// A failed blocking query: retry after a moment.
			select {
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
			}
			continue
		}
		now := time.Now()
		last = v
		if cond(v) {
			return v, now, nil
		}
		after = v.index
	}
}

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

// moved counts the shards whose owner differs between two views.
func moved(before, after view) int {
	n := 0
	for s, w := range after.owners {
		if before.owners[s] != w {
			n++
		}
	}
	return n
}

// workerIDs names n workers: w01, w02, …
func workerID(i int) string { return fmt.Sprintf("w%02d", i) }

// startLog records when each shard's latest handler started, as the
// workers themselves report it: the moment work on the shard resumes.
// The observer's view lags that by one listing of the prefix, which is
// long at 10,000 shards, so a take-away reports both.
type startLog struct {
	mu sync.Mutex
	at map[string]time.Time
}

// record notes that shard's handler started now.
func (l *startLog) record(shard string) { l.recordAt(shard, time.Now()) }

// recordAt notes that shard's handler started at at (a wall-clock time
// another process reported).
func (l *startLog) recordAt(shard string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at == nil {
		l.at = map[string]time.Time{}
	}
	if at.After(l.at[shard]) {
		l.at[shard] = at
	}
}

// last returns the latest start among shards, and whether every one of
// them started after t0.
func (l *startLog) last(shards []string, t0 time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Time
	for _, s := range shards {
		at := l.at[s]
		if !at.After(t0) {
			return time.Time{}, false
		}
		if at.After(last) {
			last = at
		}
	}
	return last, true
}

// notStarted names the shards of shards with no handler started after t0:
// up to five, and how many in all.
func (l *startLog) notStarted(shards []string, t0 time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var missing []string
	for _, s := range shards {
		if !l.at[s].After(t0) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 5 {
		return fmt.Sprintf("%d shards (%s, …)", len(missing), strings.Join(missing[:5], ", "))
	}
	return fmt.Sprintf("%d shards (%s)", len(missing), strings.Join(missing, ", "))
}

package fleetkeys

import (
	"sync"
	"time"
)

// GCRetry is how long a failed deletion of a dead member waits before the
// next attempt, so that a refusal (a permission) does not become a busy
// loop.
const GCRetry = 10 * time.Second

// DeadMembers decides when dead member keys (no session) are deleted: a
// grace after this coordinator first saw each dead, or the worker's
// RejoinUntil if later, so that with several watchers the first to see it
// decides. An engine deletes what Due returns with a check-and-set on the
// index each was seen dead at (a worker that joined again in between
// moved it), together with the worker's report keys.
type DeadMembers struct {
	grace time.Duration
	mu    sync.Mutex
	dead  map[string]deadMember
}

// deadMember is a member key seen without a session at index, and when it
// is due for deletion.
type deadMember struct {
	index uint64
	due   time.Time
}

// NewDeadMembers keeps dead member keys for grace (negative: none).
func NewDeadMembers(grace time.Duration) *DeadMembers {
	return &DeadMembers{grace: max(grace, 0), dead: make(map[string]deadMember)}
}

// Due updates the bookkeeping from a listing of the fleet (layout l) at
// time t and returns the dead member keys whose grace has passed, each
// with the index it was seen dead at.
func (g *DeadMembers) Due(l Layout, pairs []*Pair, t time.Time) []*Pair {
	g.mu.Lock()
	defer g.mu.Unlock()
	var due []*Pair
	seen := make(map[string]bool)
	for _, kv := range pairs {
		if !l.IsMember(kv.Key) || kv.Session != "" {
			continue
		}
		seen[kv.Key] = true
		d, ok := g.dead[kv.Key]
		if !ok || d.index != kv.Index {
			d = deadMember{index: kv.Index, due: t.Add(g.grace)}
			if until := RejoinUntil(kv.Value); until.After(d.due) {
				d.due = until // the worker said it will be back: the assignor keeps its shards until then
			}
			g.dead[kv.Key] = d
		}
		if !t.Before(d.due) {
			due = append(due, &Pair{Key: kv.Key, Index: d.index})
		}
	}
	for k := range g.dead {
		if !seen[k] {
			delete(g.dead, k)
		}
	}
	return due
}

// Tried records the outcome of a deletion of key Due returned: done
// (deleted, or changed since; the next listing tells) or failed, to be
// tried again GCRetry after t.
func (g *DeadMembers) Tried(key string, done bool, t time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if done {
		delete(g.dead, key)
	} else if d, ok := g.dead[key]; ok {
		d.due = t.Add(GCRetry)
		g.dead[key] = d
	}
}

// Next returns when the earliest pending deletion is due.
func (g *DeadMembers) Next() (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var next time.Time
	found := false
	for _, d := range g.dead {
		if !found || d.due.Before(next) {
			next, found = d.due, true
		}
	}
	return next, found
}

// OrphanReports are the report keys of pairs that no session holds and
// whose worker has no member key in pairs: an engine deletes each with a
// check-and-set on its index (a worker that joined since holds its report
// key again and keeps it).
func OrphanReports(l Layout, pairs []*Pair) []*Pair {
	members := map[string]bool{}
	for _, kv := range pairs {
		if id, ok := l.MemberOf(kv.Key); ok {
			members[id] = true
		}
	}
	var orphans []*Pair
	for _, kv := range pairs {
		_, worker, report := l.ReportOf(kv.Key)
		if report && kv.Session == "" && !members[worker] {
			orphans = append(orphans, kv)
		}
	}
	return orphans
}

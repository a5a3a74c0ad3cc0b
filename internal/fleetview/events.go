package fleetview

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/shardlease/shardlease/internal/history"
	"github.com/shardlease/shardlease/shard"
)

// Event kinds. Shard events carry Shard; worker events only Worker.
const (
	// Acquired, Released and Expired are a shard's changes of owner
	// (history.Changes says which is which).
	Acquired   = history.Acquired
	Released   = history.Released
	Expired    = history.Expired
	Superseded = history.Superseded
	// Joined, Left, Draining and Undrained are membership changes.
	Joined    = "joined"
	Left      = "left"
	Draining  = "draining"
	Undrained = "undrained"
	// Elected: a worker took P/assignor (Token: its epoch). Vacated: the
	// lock was freed (its holder resigned, or its session ended) and
	// nobody holds it yet. Worker is the assignor in both.
	Elected = "elected"
	Vacated = "vacated"
)

// Event is one change of ownership or membership, with its reason.
type Event struct {
	At     time.Time   `json:"at"`
	Index  uint64      `json:"index"`
	Kind   string      `json:"kind"`
	Shard  shard.ID    `json:"shard,omitempty"`
	Worker string      `json:"worker"`         // who acquired, released, joined...
	From   string      `json:"from,omitempty"` // acquired: the previous holder
	Token  shard.Token `json:"token,omitempty"`
	Reason string      `json:"reason"`
}

// String is the event as one line of shardctl watch (without the time).
func (e Event) String() string {
	switch e.Kind {
	case Acquired:
		from := ""
		if e.From != "" && e.From != e.Worker {
			from = " from " + e.From
		}
		return fmt.Sprintf("%s → %s%s (token %d): %s", e.Shard, e.Worker, from, e.Token, e.Reason)
	case Released, Expired, Superseded:
		return fmt.Sprintf("%s ← %s %s: %s", e.Shard, e.Worker, e.Kind, e.Reason)
	case Frozen, Unfrozen:
		return fmt.Sprintf("fleet %s: %s", e.Kind, e.Reason)
	case Elected, Vacated:
		return fmt.Sprintf("assignor %s %s (epoch %d): %s", orDefault(e.Worker, "(unreadable)"), e.Kind, e.Token, e.Reason)
	default:
		return fmt.Sprintf("worker %s %s: %s", e.Worker, e.Kind, e.Reason)
	}
}

// Diff returns the changes between two snapshots of one fleet, in shard
// order then worker order, stamped at. A nil prev (the first snapshot)
// gives no events: the state was already there.
func Diff(prev *shard.Snapshot, next shard.Snapshot, at time.Time) []Event {
	if prev == nil {
		return nil
	}
	var out []Event
	add := func(e Event) {
		e.At, e.Index = at, next.Index
		out = append(out, e)
	}
	expired := map[string]int{} // worker → shards its session held when it ended
	for _, c := range history.Changes(prev, next, at) {
		if c.Kind == Expired {
			expired[c.Worker]++
		}
		add(Event{Kind: c.Kind, Shard: c.Shard, Worker: c.Worker, From: c.From, Token: c.Token, Reason: c.Reason})
	}
	pm, nm := memberIndex(*prev), memberIndex(next)

	ids := make([]string, 0, len(nm)+len(pm))
	for id := range nm {
		ids = append(ids, id)
	}
	for id := range pm {
		if _, ok := nm[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		o, wasLive := pm[id]
		n, isLive := nm[id]
		wasLive, isLive = wasLive && o.Live(), isLive && n.Live()
		switch {
		case isLive && (!wasLive || o.Session != n.Session):
			why := "new session " + string(n.Session)
			if n.Version != "" {
				why += ", version " + n.Version
			}
			add(Event{Kind: Joined, Worker: id, Reason: why})
		case wasLive && !isLive:
			why := "session ended after releasing its shards (shutdown or drain)"
			if k := expired[id]; k > 0 {
				why = fmt.Sprintf("session ended holding %d shards (crash, partition, or a pause past the TTL)", k)
			}
			add(Event{Kind: Left, Worker: id, Reason: why})
		}
		if isLive && wasLive && o.Session == n.Session && o.Draining != n.Draining {
			if n.Draining {
				add(Event{Kind: Draining, Worker: id, Reason: "an operator asked it to hand off every shard"})
			} else {
				add(Event{Kind: Undrained, Worker: id, Reason: "drain withdrawn: it takes a share again"})
			}
		}
		if e, ok := cordonChange(id, o, n); ok && isLive && wasLive {
			add(e)
		}
	}
	if e, ok := freezeChange(prev.Freeze, next.Freeze); ok {
		add(e)
	}
	if e, ok := assignorChange(prev.Assignor, next.Assignor); ok {
		add(e)
	}
	return out
}

// assignorChange is the event for P/assignor changing hands, if it did.
func assignorChange(prev, next shard.LockKey) (Event, bool) {
	switch {
	case next.Held() && (prev.Session != next.Session || prev.Token != next.Token):
		why := "took the assignor lock"
		switch {
		case prev.Held() && prev.Worker == next.Worker:
			why = fmt.Sprintf("took the assignor lock again (its epoch was %d)", prev.Token)
		case prev.Held() && prev.Worker != "":
			why += ", after " + prev.Worker
		}
		return Event{Kind: Elected, Worker: next.Worker, Token: next.Token, Reason: why}, true
	case !next.Held() && prev.Held():
		return Event{Kind: Vacated, Worker: prev.Worker, Token: prev.Token,
			Reason: "the lock is free (it resigned, or its session ended); the next candidate takes it"}, true
	}
	return Event{}, false
}

func memberIndex(s shard.Snapshot) map[string]shard.MemberState {
	m := make(map[string]shard.MemberState, len(s.Members))
	for _, ms := range s.Members {
		m[ms.ID] = ms
	}
	return m
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// LatestAcquired lists, newest first, the last n acquisitions recorded in a
// snapshot's held keys (each keeps its owner's acquisition time, reason and
// token): what a one-off look can tell of recent moves without watching.
func LatestAcquired(s shard.Snapshot, n int) []Event {
	var out []Event
	for _, st := range s.Shards {
		if !st.Held() || st.Owner.Worker == "" || st.Owner.Since.IsZero() {
			continue
		}
		out = append(out, Event{At: st.Owner.Since, Index: st.Token.Index(), Kind: Acquired, Shard: st.Shard,
			Worker: st.Owner.Worker, Token: st.Token, Reason: history.AcquiredWhy(st.Owner)})
	}
	slices.SortStableFunc(out, func(a, b Event) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return cmp.Compare(b.Token, a.Token)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// Tracker follows a fleet's snapshots and keeps its recent events. It is
// safe for concurrent use.
type Tracker struct {
	limit int

	mu     sync.Mutex
	prev   *shard.Snapshot
	recent []Event // newest first
}

// NewTracker keeps the last limit events (default 200 when limit ≤ 0).
func NewTracker(limit int) *Tracker {
	if limit <= 0 {
		limit = 200
	}
	return &Tracker{limit: limit}
}

// Observe records the snapshot and returns the events since the previous
// one, oldest first. The first snapshot seeds the recent events with the
// acquisitions recorded in its keys, and returns none. A snapshot whose
// index went backwards (a reset coordinator) starts over.
func (t *Tracker) Observe(s shard.Snapshot, at time.Time) []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.prev != nil && s.Index < t.prev.Index {
		t.prev, t.recent = nil, nil
	}
	if t.prev == nil {
		t.prev = &s
		if len(t.recent) == 0 {
			t.recent = LatestAcquired(s, t.limit)
		}
		return nil
	}
	evs := Diff(t.prev, s, at)
	t.prev = &s
	for _, e := range evs {
		t.recent = append([]Event{e}, t.recent...)
	}
	if len(t.recent) > t.limit {
		t.recent = t.recent[:t.limit]
	}
	return evs
}

// Seed starts the recent events, before the first snapshot, from the
// fleet's recorded history (oldest first, as a history.Log keeps it), so a
// view opened after a change still shows it; the first snapshot then adds
// nothing of its own. It does nothing once a snapshot was observed.
func (t *Tracker) Seed(changes []history.Change) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.prev != nil {
		return
	}
	t.recent = t.recent[:0]
	for i := len(changes) - 1; i >= 0 && len(t.recent) < t.limit; i-- {
		c := changes[i]
		t.recent = append(t.recent, Event{At: c.When(), Index: c.Index, Kind: c.Kind, Shard: c.Shard, Worker: c.Worker, From: c.From,
			Token: c.Token, Reason: c.Reason})
	}
}

// Recent returns up to n recent events, newest first.
func (t *Tracker) Recent(n int) []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	n = min(n, len(t.recent))
	return slices.Clone(t.recent[:n])
}

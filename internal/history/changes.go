package history

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// The kinds of change.
const (
	// Acquired: a worker took a shard (From: the previous holder, if any).
	Acquired = "acquired"
	// Released: the holder let the shard go voluntarily (a hand-off, a
	// drain, a shutdown, an operator's release), or its key was deleted.
	Released = "released"
	// Expired: the holder's session ended without releasing the shard (a
	// crash, a partition, a pause past the TTL, a destroy).
	Expired = "expired"
	// Superseded: the holder's tenure ended, and another worker's came and
	// went, between two listings: how the first ended is unknown. The
	// change after it tells of the unseen tenure (its token unknown: 0).
	Superseded = "superseded"
)

// Change is one change of a shard's owner, as seen between two listings.
type Change struct {
	// At is when the listing that showed it was taken (the observer's
	// clock); Index is that listing's index.
	At    time.Time `json:"at"`
	Index uint64    `json:"index"`
	Kind  string    `json:"kind"`
	Shard shard.ID  `json:"shard"`
	// Worker acquired, released or lost the shard; From, for an
	// acquisition, is who held it before (the key's last owner).
	Worker string `json:"worker"`
	From   string `json:"from,omitempty"`
	// Token is the acquirer's, or, for an end, that of the tenure that
	// ended.
	Token shard.Token `json:"token"`
	// Since is, for an acquisition, when the worker took the lock, as
	// its own clock wrote it into the key (zero if the key says nothing).
	Since time.Time `json:"since,omitzero"`
	// Seen is, for an end (or an acquisition that ended the tenure before
	// it), when a listing last showed the tenure that ended still held:
	// it ended after Seen and by At (zero: not known).
	Seen time.Time `json:"seen,omitzero"`
	// Reason is why: the acquirer's placement reason, the releaser's
	// reason, or what ended the tenure.
	Reason string `json:"reason"`
}

// String is the change as one line (without its time).
func (c Change) String() string {
	switch c.Kind {
	case Acquired:
		from := ""
		if c.From != "" && c.From != c.Worker {
			from = " from " + c.From
		}
		return fmt.Sprintf("%s → %s%s (token %d): %s", c.Shard, c.Worker, from, c.Token, c.Reason)
	default:
		return fmt.Sprintf("%s ← %s %s (token %d): %s", c.Shard, c.Worker, c.Kind, c.Token, c.Reason)
	}
}

// When is when the change happened as well as the log knows: an
// acquisition's own time (the worker's clock) when its key said it, else
// when the listing showed it.
func (c Change) When() time.Time {
	if c.Kind == Acquired && !c.Since.IsZero() {
		return c.Since
	}
	return c.At
}

// Changes returns the changes of owner between two listings of one fleet,
// in shard order, stamped at; a nil prev (the first listing) gives none.
func Changes(prev *shard.Snapshot, next shard.Snapshot, at time.Time) []Change {
	if prev == nil {
		return nil
	}
	var out []Change
	add := func(c Change) {
		c.At, c.Index = at, next.Index
		out = append(out, c)
	}
	// Both lists by shard ID, walked together: a map of the previous one
	// costs more than the rest of a step at 100,000 shards.
	olds, news := byShard(prev.Shards), byShard(next.Shards)
	deleted := func(old shard.ShardState) { // a key deleted (by an operator)
		if old.Held() {
			add(Change{Kind: Released, Shard: old.Shard, Worker: HolderOf(*prev, old), Token: old.Token, Reason: "lock key deleted"})
		}
	}
	i := 0
	for _, st := range news {
		for ; i < len(olds) && olds[i].Shard < st.Shard; i++ {
			deleted(olds[i])
		}
		var old shard.ShardState
		existed := i < len(olds) && olds[i].Shard == st.Shard
		if existed {
			old, i = olds[i], i+1
		}
		switch {
		case st.Held() && (!existed || old.Session != st.Session || old.Token != st.Token):
			from := ""
			if existed {
				from = old.Owner.Worker
			}
			who := st.Owner.Worker
			if who == "" {
				who = HolderOf(next, st)
			}
			add(Change{Kind: Acquired, Shard: st.Shard, Worker: who, From: from, Token: st.Token,
				Since: st.Owner.Since, Reason: AcquiredWhy(st.Owner)})
		case !st.Held() && existed && old.Held():
			who := HolderOf(*prev, old)
			if another(old.Owner, st.Owner) {
				add(Change{Kind: Superseded, Shard: st.Shard, Worker: who, Token: old.Token,
					Reason: "ended between two listings, and " + st.Owner.Worker + " held it after, unseen"})
				add(end(st, st.Owner.Worker, 0, " (held between two listings; its token is unknown)"))
				continue
			}
			add(end(st, who, old.Token, ""))
		}
	}
	for ; i < len(olds); i++ {
		deleted(olds[i])
	}
	slices.SortStableFunc(out, func(a, b Change) int { return cmp.Compare(a.Shard, b.Shard) })
	return out
}

// byShard returns states sorted by shard, as a snapshot lists them (a
// sorted copy when they are not).
func byShard(states []shard.ShardState) []shard.ShardState {
	less := func(a, b shard.ShardState) int { return cmp.Compare(a.Shard, b.Shard) }
	if slices.IsSortedFunc(states, less) {
		return states
	}
	return slices.SortedFunc(slices.Values(states), less)
}

// end is the change for a tenure of who at token whose key st is now
// free: released (the key says why) or expired.
func end(st shard.ShardState, who string, token shard.Token, note string) Change {
	if st.Owner.Released != shard.ReasonUnknown {
		return Change{Kind: Released, Shard: st.Shard, Worker: who, Token: token, Reason: st.Owner.Released.String() + note}
	}
	return Change{Kind: Expired, Shard: st.Shard, Worker: who, Token: token, Reason: who + "'s session ended without releasing it" + note}
}

// another reports whether a free key's value was written by another
// acquisition than the one the previous listing saw held: another worker,
// or the same one at another time. A value that names no worker (an edit)
// tells nothing.
func another(before, now shard.Owner) bool {
	if before.Worker == "" || now.Worker == "" {
		return false
	}
	return before.Worker != now.Worker || !before.Since.Equal(now.Since)
}

// HolderOf is the worker holding st in s: the live member whose session
// holds the key, else the worker its value names.
func HolderOf(s shard.Snapshot, st shard.ShardState) string {
	for _, m := range s.Members {
		if m.Live() && m.Session == st.Session {
			return m.ID
		}
	}
	return st.Owner.Worker
}

// AcquiredWhy is why the owner says it took a shard, or "acquired" when
// its lock's value says nothing.
func AcquiredWhy(o shard.Owner) string {
	if o.Reason == shard.ReasonUnknown {
		return "acquired"
	}
	return o.Why.String()
}

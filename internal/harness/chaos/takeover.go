package chaos

import (
	"slices"
	"time"

	"github.com/shardlease/shardlease/internal/offsetlog"
	"github.com/shardlease/shardlease/shard"
)

// Fault is one injected fault.
type Fault struct {
	Kind   Kind
	Target string // the worker's ID, or the Consul agent's name
	// Victims are the workers the fault hit: the target worker, or every
	// worker of the target client agent; none for a leader kill, which
	// hits the whole fleet (see Touches).
	Victims []string
	Start   time.Time // when it was injected
	End     time.Time // when it was healed (the worker continued, restarted, or the agent came back)
	Detail  string    // e.g. the latency of slow renewals
	Err     string    // the injection failed
	// Assignor is, for an assignor fault, P/assignor as read just before
	// it started (its holder is the Target); Elected the first holder
	// with another session seen after the start (none: empty Session).
	Assignor, Elected Holder
}

// Touches reports whether the fault hit worker: one of its victims, or
// anyone for a leader kill (no worker can renew during the election).
func (f Fault) Touches(worker string) bool {
	return f.Kind == LeaderKill || slices.Contains(f.Victims, worker)
}

// MaxCommitGap is the longest a running `shardd worker` handler goes
// between commits: 1.5 × its --commit-every of 1 s.
const MaxCommitGap = 1500 * time.Millisecond

// Takeover is what happened to the shards the victims of a fault held when
// it hit them.
type Takeover struct {
	// Shards is how many shards the victims held when the fault started.
	Shards int
	// Done: every one of them was fenced by a newer owner afterwards.
	Done bool
	// Took is from the fault to the last of those fences.
	Took time.Duration
	// Duplicates estimates the records processed twice: per shard, what
	// the victim had processed by the fault minus the offset the new owner
	// loaded, summed over the shards. What the victim had processed is its
	// last commit attempt's offset before the fault, plus rate × the time
	// from that attempt to the fault, at most MaxCommitGap (a handler that
	// did not commit for longer had stopped). Only for SIGSTOPs and
	// SIGKILLs (Kind.stops, Kind.kills), whose victim stops processing at
	// the fault; a victim of the other kinds goes on until it steps down,
	// which the history does not show.
	Duplicates int64
	// Counted: Duplicates was estimated.
	Counted bool
}

// TakeoverOf measures the takeover of the shards the fault's victims were
// processing at its start: those whose holder at t (the process of the
// highest accepted fence that returned before t) is a victim and fenced or
// committed with that token within activeWindow before t. A shard a victim
// had lost already, to an earlier fault, and no one had taken yet, is left
// out: it was not being processed. rate is the stream's records per second
// per shard.
func (h *History) TakeoverOf(f Fault, rate int) Takeover {
	t0 := f.Start.UnixNano()
	var tk Takeover
	tk.Done = true
	for _, id := range h.Shards() {
		s := h.byShard[id]
		holder, ok := s.holderAt(t0)
		if !ok || !slices.Contains(f.Victims, holder.Worker) || !s.active(holder, t0) {
			continue
		}
		tk.Shards++
		next, ok := s.nextFence(holder.Token, t0)
		if !ok {
			tk.Done = false
			continue
		}
		tk.Took = max(tk.Took, time.Duration(next.End-t0))
		if f.Kind.stops() || f.Kind.kills() {
			tk.Counted = true
			tk.Duplicates += s.duplicates(holder, next, t0, rate)
		}
	}
	if tk.Shards == 0 {
		tk.Done = false
	}
	return tk
}

// activeWindow: a handler that neither fenced nor committed within it
// before a fault was not running (see MaxCommitGap), with margin for a
// busy machine.
const activeWindow = MaxCommitGap + 500*time.Millisecond

// active: holder's process fenced or committed with its token within
// activeWindow before t.
func (s *shardOps) active(holder offsetlog.Op, t int64) bool {
	from := t - int64(activeWindow)
	return slices.ContainsFunc(s.all, func(o offsetlog.Op) bool {
		return o.Start >= from && o.Start < t && o.Kind != offsetlog.OpLoad && o.Token == holder.Token && o.Process() == holder.Process()
	})
}

// holderAt returns the accepted fence with the highest token among those
// that returned before t.
func (s *shardOps) holderAt(t int64) (offsetlog.Op, bool) {
	var best offsetlog.Op
	found := false
	for _, f := range s.fences {
		if f.End >= t {
			break
		}
		if !found || f.Token > best.Token {
			best, found = f, true
		}
	}
	return best, found
}

// nextFence returns the first accepted fence with a token above tok that
// returned after t.
func (s *shardOps) nextFence(tok shard.Token, t int64) (offsetlog.Op, bool) {
	for _, f := range s.fences {
		if f.End > t && f.Token > tok {
			return f, true
		}
	}
	return offsetlog.Op{}, false
}

// duplicates estimates what the new owner (fence next) processes again of
// what the old one (fence old) had processed by t.
func (s *shardOps) duplicates(old, next offsetlog.Op, t int64, rate int) int64 {
	i := slices.IndexFunc(s.all, func(o offsetlog.Op) bool {
		return o.Kind == offsetlog.OpLoad && o.Result == offsetlog.ResultOK && o.Process() == next.Process() && o.Start >= next.End
	})
	if i < 0 {
		return 0
	}
	loaded := s.all[i].CP.Offset
	var last *offsetlog.Op
	for j := range s.all {
		o := &s.all[j]
		if o.Start >= t {
			break
		}
		if o.Kind == offsetlog.OpCommit && o.Process() == old.Process() && o.Token == old.Token {
			last = o
		}
	}
	if last == nil {
		return 0
	}
	since := min(time.Duration(t-last.Start), MaxCommitGap)
	processed := last.Offset + int64(float64(rate)*since.Seconds())
	return max(0, processed-loaded)
}

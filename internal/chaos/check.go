package chaos

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/shardlease/shardlease/internal/offsetlog"
	"github.com/shardlease/shardlease/shard"
)

// History is a merged offsetlog history, indexed by shard.
type History struct {
	Ops     []offsetlog.Op
	byShard map[shard.ID]*shardOps
}

// shardOps is one shard's part of the history.
type shardOps struct {
	all     []offsetlog.Op // by start
	writes  prefixMax      // accepted fences and commits: their tokens
	commits prefixMax      // accepted commits: their offsets
	fences  []offsetlog.Op // accepted fences, by end
}

// prefixMax answers "the highest value among the operations that returned
// before time t" in O(log n): operations sorted by end, with the running
// maximum of their values.
type prefixMax struct {
	ends []int64
	max  []int64
}

func newPrefixMax(ops []offsetlog.Op, value func(offsetlog.Op) int64) prefixMax {
	ops = slices.Clone(ops)
	slices.SortFunc(ops, func(a, b offsetlog.Op) int { return cmp.Compare(a.End, b.End) })
	var p prefixMax
	for i, o := range ops {
		v := value(o)
		if i > 0 {
			v = max(v, p.max[i-1])
		}
		p.ends, p.max = append(p.ends, o.End), append(p.max, v)
	}
	return p
}

// before returns the highest value of an operation that ended before t, and
// whether there was one.
func (p prefixMax) before(t int64) (int64, bool) {
	i, _ := slices.BinarySearch(p.ends, t) // first end ≥ t
	if i == 0 {
		return 0, false
	}
	return p.max[i-1], true
}

// NewHistory indexes ops (as offsetlog.Read returns them).
func NewHistory(ops []offsetlog.Op) *History {
	h := &History{Ops: ops, byShard: map[shard.ID]*shardOps{}}
	parts := map[shard.ID][]offsetlog.Op{}
	for _, o := range ops {
		parts[o.Shard] = append(parts[o.Shard], o)
	}
	for id, all := range parts {
		var writes, commits, fences []offsetlog.Op
		for _, o := range all {
			if o.Result != offsetlog.ResultOK {
				continue
			}
			switch o.Kind {
			case offsetlog.OpCommit:
				writes, commits = append(writes, o), append(commits, o)
			case offsetlog.OpFence:
				writes, fences = append(writes, o), append(fences, o)
			}
		}
		slices.SortFunc(fences, func(a, b offsetlog.Op) int { return cmp.Compare(a.End, b.End) })
		h.byShard[id] = &shardOps{
			all:     all,
			writes:  newPrefixMax(writes, func(o offsetlog.Op) int64 { return int64(o.Token) }),
			commits: newPrefixMax(commits, func(o offsetlog.Op) int64 { return o.Offset }),
			fences:  fences,
		}
	}
	return h
}

// Shards returns the shards the history touches, sorted.
func (h *History) Shards() []shard.ID { return slices.Sorted(maps.Keys(h.byShard)) }

// Verdict is what Check found.
type Verdict struct {
	Ops, Commits, Accepted, Rejected, Errors, Unknown, Loads int
	// FencedOut lists the commits attempted by fenced-out owners: a
	// higher token had been accepted for the shard before the commit
	// started. Every one must have been rejected.
	FencedOut []offsetlog.Op
	// StaleAccepted counts the FencedOut commits that were accepted.
	StaleAccepted int
	// Problems names every violation: stale commits accepted, offsets
	// that went back, loads that missed an acknowledged commit.
	Problems []string
}

// Check runs the checkers that need no search over the history:
//
//   - no stale commit: no accepted commit has a token below one accepted
//     (fence or commit) for its shard before it started;
//   - offsets never regress: no accepted commit stores an offset below one
//     acknowledged for its shard before it started;
//   - no acknowledged commit lost: no load (a new owner's, after its fence,
//     or the final one) returns an offset below one acknowledged for its
//     shard before the load started.
func (h *History) Check() Verdict {
	v := Verdict{Ops: len(h.Ops)}
	bad := func(o offsetlog.Op, format string, args ...any) {
		v.Problems = append(v.Problems, o.String()+": "+fmt.Sprintf(format, args...))
	}
	for _, id := range h.Shards() {
		s := h.byShard[id]
		for _, o := range s.all {
			switch o.Kind {
			case offsetlog.OpCommit:
				v.Commits++
				switch o.Result {
				case offsetlog.ResultOK:
					v.Accepted++
				case offsetlog.ResultStale:
					v.Rejected++
				case offsetlog.ResultError:
					v.Errors++
				default:
					v.Unknown++
				}
				if hi, ok := s.writes.before(o.Start); ok && int64(o.Token) < hi {
					v.FencedOut = append(v.FencedOut, o)
					if o.Result == offsetlog.ResultOK {
						v.StaleAccepted++
						bad(o, "stale commit accepted: token %d had been accepted before it started", hi)
					}
				}
				if o.Result != offsetlog.ResultOK {
					continue
				}
				if off, ok := s.commits.before(o.Start); ok && o.Offset < off {
					bad(o, "offset went back: %d had been acknowledged before it started", off)
				}
			case offsetlog.OpLoad:
				if o.Result != offsetlog.ResultOK {
					continue
				}
				v.Loads++
				if off, ok := s.commits.before(o.Start); ok && o.CP.Offset < off {
					bad(o, "load returned offset %d, but %d had been acknowledged before it started: a commit was lost", o.CP.Offset, off)
				}
			}
		}
	}
	return v
}

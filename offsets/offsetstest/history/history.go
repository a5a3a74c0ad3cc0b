package history

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Op is one Fence or Commit as a client saw it, for Check. Start and
// End are positions in one sequence shared by every client (an atomic
// counter read just before the call and just after it returned), so
// a.End < b.Start means a returned before b was called.
type Op struct {
	Shard  shard.ID
	Fence  bool // a Fence; otherwise a Commit
	Token  shard.Token
	Offset int64 // for a Commit
	Start  uint64
	End    uint64
	Err    error // nil: accepted
}

func (o Op) String() string {
	if o.Fence {
		return fmt.Sprintf("Fence(%q, %d)@[%d,%d]", o.Shard, o.Token, o.Start, o.End)
	}
	return fmt.Sprintf("Commit(%q, %d, %d)@[%d,%d]", o.Shard, o.Token, o.Offset, o.Start, o.End)
}

// Check returns every way in which a history of concurrent operations
// and the checkpoints loaded after it break the rule of package offsets; nil
// when they do not. It needs no lock and no model of the store's internal
// order; it checks what any correct store must show:
//
//   - no stale write: an operation accepted after another one with a higher
//     token had returned accepted, for the same shard;
//   - the final floor is the highest accepted token, and the final offset
//     was written by an accepted commit with the highest accepted commit
//     token (none: offset and token 0);
//   - every rejection is justified: an accepted operation with a higher
//     token had started before the rejected one returned, and the message
//     names the shard and the token;
//   - no other error.
//
// A store whose check and write are not atomic fails the first two on a
// busy enough history.
func Check(ops []Op, final map[shard.ID]offsets.Checkpoint) []string {
	var problems []string
	byShard := map[shard.ID][]Op{}
	for _, o := range ops {
		byShard[o.Shard] = append(byShard[o.Shard], o)
	}
	for _, id := range slices.Sorted(maps.Keys(byShard)) {
		fc, ok := final[id]
		if !ok {
			problems = append(problems, fmt.Sprintf("shard %s: no final checkpoint", id))
			continue
		}
		problems = append(problems, checkShard(id, byShard[id], fc)...)
	}
	return problems
}

func checkShard(id shard.ID, ops []Op, final offsets.Checkpoint) []string {
	var problems []string
	report := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("shard %s: ", id)+fmt.Sprintf(format, args...))
	}
	var accepted []Op
	var maxToken, maxCommit shard.Token
	for _, o := range ops {
		switch {
		case o.Err == nil:
			accepted = append(accepted, o)
			maxToken = max(maxToken, o.Token)
			if !o.Fence {
				maxCommit = max(maxCommit, o.Token)
			}
		case !errors.Is(o.Err, offsets.ErrStaleToken):
			report("%v: unexpected error: %v", o, o.Err)
		case !strings.Contains(o.Err.Error(), fmt.Sprintf("shard %s: token %d ", id, o.Token)):
			report("%v: message %q does not name the shard and the token", o, o.Err)
		}
	}

	// Final state.
	if final.Token > final.Floor {
		report("final token %d is above final floor %d", final.Token, final.Floor)
	}
	if final.Floor != maxToken {
		report("final floor %d, but the highest accepted token is %d", final.Floor, maxToken)
	}
	if final.Token != maxCommit {
		report("final checkpoint written by token %d, but the highest accepted commit token is %d", final.Token, maxCommit)
	}
	if maxCommit == 0 && final.Offset != 0 {
		report("final offset %d, but no commit was accepted", final.Offset)
	}
	if maxCommit != 0 && !slices.ContainsFunc(accepted, func(o Op) bool {
		return !o.Fence && o.Token == final.Token && o.Offset == final.Offset
	}) {
		report("final offset %d with token %d was not written by any accepted commit", final.Offset, final.Token)
	}

	// No stale write: sort the accepted operations by when they returned,
	// keep a running maximum, and look each one up by when it started.
	byEnd := slices.Clone(accepted)
	slices.SortFunc(byEnd, func(x, y Op) int { return cmp.Compare(x.End, y.End) })
	prefixMax := make([]shard.Token, len(byEnd))
	for i, o := range byEnd {
		prefixMax[i] = o.Token
		if i > 0 {
			prefixMax[i] = max(prefixMax[i], prefixMax[i-1])
		}
	}
	for _, o := range accepted {
		// n = how many accepted operations had returned before o started.
		n, _ := slices.BinarySearchFunc(byEnd, o.Start, func(x Op, start uint64) int { return cmp.Compare(x.End, start) })
		if n > 0 && prefixMax[n-1] > o.Token {
			report("stale write accepted: %v after token %d had been accepted", o, prefixMax[n-1])
		}
	}

	// Every rejection justified.
	for _, o := range ops {
		if !errors.Is(o.Err, offsets.ErrStaleToken) {
			continue
		}
		if !slices.ContainsFunc(accepted, func(h Op) bool { return h.Token > o.Token && h.Start < o.End }) {
			report("%v rejected as stale, but no higher token had been offered before it returned", o)
		}
	}
	return problems
}

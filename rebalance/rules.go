package rebalance

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/shardlease/shardlease/shard"
)

// placement is the placement rules compiled against one step's sorted
// shards and members: every shard falls in a class, and the shards of a
// class may be owned by, and prefer, the same members.
type placement struct {
	class   []int32     // shard i's class
	classes []ruleClass // classes[0]: the shards no rule is about
	// takers are, in one step, each class's members that may be given its
	// shards (strand); nil until then.
	takers [][]int32
}

// ruleClass is what the rules say of a class's shards.
type ruleClass struct {
	may    []bool // by member: every hard rule allows it; nil: every member may
	prefer []bool // by member: a prefer rule selects it; nil: none does
	first  int32  // the class's first shard, to order classes by something the input's order does not change
	size   int
}

// hard reports whether some hard rule restricts the class's owners.
func (c *ruleClass) hard() bool { return c.may != nil }

// allows reports whether member m may own shard i.
func (pl *placement) allows(i int, m int32) bool {
	if pl == nil {
		return true
	}
	c := &pl.classes[pl.class[i]]
	return c.may == nil || c.may[m]
}

// hardAt reports whether a hard rule is about shard i.
func (pl *placement) hardAt(i int) bool { return pl != nil && pl.classes[pl.class[i]].hard() }

// prefers reports whether a prefer rule about shard i selects member m.
func (pl *placement) prefers(i int, m int32) bool {
	if pl == nil {
		return false
	}
	c := &pl.classes[pl.class[i]]
	return c.prefer != nil && c.prefer[m]
}

// checkRules returns problems with every invalid rule added.
func checkRules(rules []shard.PlacementRule, problems []string) []string {
	for k, r := range rules {
		if err := r.Validate(); err != nil {
			problems = append(problems, fmt.Sprintf("rule %d: %v", k+1, err))
		}
	}
	return problems
}

// shardRange returns the shards a rule is about as the range [lo, hi) of
// the sorted shards: the IDs that share a prefix are contiguous in sorted
// order, so two binary searches find them.
func shardRange(shards []shard.ID, r shard.PlacementRule) (lo, hi int) {
	p, prefix := r.Prefix()
	n := len(shards)
	lo = sort.Search(n, func(i int) bool { return string(shards[i]) >= p })
	if !prefix {
		if lo < n && string(shards[lo]) == p {
			return lo, lo + 1
		}
		return lo, lo
	}
	hi = lo + sort.Search(n-lo, func(j int) bool { return !strings.HasPrefix(string(shards[lo+j]), p) })
	return lo, hi
}

// compileRules returns the rules compiled against the sorted shards and
// members, or nil when no rule is about any shard. It costs
// O(R log N + N + C·(S·R + W)) for R rules, N shards, W members, S
// distinct label sets among the members and C classes.
func compileRules(shards []shard.ID, members []Member, rules []shard.PlacementRule) *placement {
	if len(rules) == 0 || len(shards) == 0 {
		return nil
	}
	// The rules start and end at cuts in the sorted shards; between two
	// cuts the same rules apply. A sweep keeps the set of rules open.
	type edge struct{ at, rule int }
	var opens, closes []edge
	for k, r := range rules {
		if lo, hi := shardRange(shards, r); lo < hi {
			opens = append(opens, edge{lo, k})
			closes = append(closes, edge{hi, k})
		}
	}
	if len(opens) == 0 {
		return nil
	}
	byAt := func(a, b edge) int { return a.at - b.at }
	slices.SortFunc(opens, byAt)
	slices.SortFunc(closes, byAt)

	sigs, sigOf := labelSets(members, rules)
	pl := &placement{class: make([]int32, len(shards)), classes: []ruleClass{{first: -1}}}
	byVerdict := map[string]int32{"": 0}
	open := make([]bool, len(rules))
	var active []int
	o, c := 0, 0
	for at := 0; at < len(shards); {
		for ; c < len(closes) && closes[c].at == at; c++ {
			open[closes[c].rule] = false
		}
		for ; o < len(opens) && opens[o].at == at; o++ {
			open[opens[o].rule] = true
		}
		next := len(shards)
		if o < len(opens) {
			next = opens[o].at
		}
		if c < len(closes) {
			next = min(next, closes[c].at)
		}
		active = active[:0]
		for k, on := range open {
			if on {
				active = append(active, k)
			}
		}
		k := pl.classFor(byVerdict, verdicts(rules, active, sigs), sigOf, int32(at))
		for i := at; i < next; i++ {
			pl.class[i] = k
		}
		pl.classes[k].size += next - at
		at = next
	}
	return pl
}

// verdicts is what the active rules say of each label set: 'x' may not
// own, 'p' may and is preferred, '.' may; "" when no rule applies at all.
func verdicts(rules []shard.PlacementRule, active []int, sigs []Member) string {
	if len(active) == 0 {
		return ""
	}
	b := make([]byte, len(sigs))
	for s, m := range sigs {
		v := byte('.')
		for _, k := range active {
			r := rules[k]
			sel := r.Selects(m.Zone, m.Labels)
			if r.Kind.Hard() && sel != (r.Kind == shard.RulePin) {
				v = 'x'
				break
			}
			if r.Kind == shard.RulePrefer && sel {
				v = 'p'
			}
		}
		b[s] = v
	}
	return string(b)
}

// classFor returns the class of shards whose label sets get verdict v,
// adding it (its per-member views) when it is new.
func (pl *placement) classFor(byVerdict map[string]int32, v string, sigOf []int, first int32) int32 {
	if k, ok := byVerdict[v]; ok {
		return k
	}
	c := ruleClass{first: first}
	if strings.ContainsRune(v, 'x') {
		c.may = make([]bool, len(sigOf))
		for m, s := range sigOf {
			c.may[m] = v[s] != 'x'
		}
	}
	if strings.ContainsRune(v, 'p') {
		c.prefer = make([]bool, len(sigOf))
		for m, s := range sigOf {
			c.prefer[m] = v[s] == 'p'
		}
	}
	if c.may == nil && c.prefer == nil {
		byVerdict[v] = 0 // rules apply, but leave every member as it is
		return 0
	}
	k := int32(len(pl.classes))
	pl.classes = append(pl.classes, c)
	byVerdict[v] = k
	return k
}

// labelSets groups the members by what the rules can see of them (their
// zone and the labels the rules name): one representative each, and each
// member's group.
func labelSets(members []Member, rules []shard.PlacementRule) ([]Member, []int) {
	keys := map[string]bool{}
	for _, r := range rules {
		for k := range r.Labels {
			keys[k] = true
		}
	}
	names := slices.Sorted(maps.Keys(keys))
	var reps []Member
	index := map[string]int{}
	sigOf := make([]int, len(members))
	var b strings.Builder
	for m, mem := range members {
		b.Reset()
		for _, k := range names {
			v, ok := mem.Labels[k]
			if k == shard.ZoneLabel {
				v, ok = mem.Zone, mem.Zone != ""
			}
			if ok {
				b.WriteString(v)
			} else {
				b.WriteByte(0)
			}
			b.WriteByte(1)
		}
		s, ok := index[b.String()]
		if !ok {
			s = len(reps)
			index[b.String()] = s
			reps = append(reps, mem)
		}
		sigOf[m] = s
	}
	return reps, sigOf
}

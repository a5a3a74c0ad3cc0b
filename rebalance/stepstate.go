package rebalance

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// stepInput is a State validated and turned into indexes: shards and members
// sorted, and everything else as positions in them (int32: at 100,000
// shards the per-shard slices are what a step costs in memory traffic).
type stepInput struct {
	now     time.Time
	frozen  bool
	shards  []shard.ID // sorted; may alias State.Shards, never written
	members []Member   // live, sorted by ID
	ids     []string   // members' IDs
	// holder[i] is the index of shard i's live holder, or -1.
	holder []int32
	// flags[i] holds shard i's flags; readState sets orphaned.
	flags []uint8
	// keys[m] is member m's key as read (zero when it has none) and sets[m]
	// its shards as ascending indexes.
	keys []Assignment
	sets [][]int32
	// took[m] says that member m now holds a shard its key listed as free:
	// it made progress, whatever the count of its free shards says (other
	// shards of its key may have been freed meanwhile).
	took []bool
	// keyed[m] says that member m has a key. A live member without one that
	// holds shards must be given one: its worker keeps what it runs and
	// starts nothing until its key is written (a key deleted by hand, or by
	// a stale delete landing after the member rejoined).
	keyed []bool
	// standby[m] is member m's key's standby shards as ascending indexes
	// (a shard outside the set is left out: one a returning worker keeps
	// is carried through, carryStandbys).
	standby [][]int32
	// dead are the workers with a key that are not live, sorted.
	dead []string
	// load[i] is shard i's load when Step balances load; nil in count
	// balance (no Loads, or the same load for every shard).
	load []float64
	// rules are State.Rules compiled, nil when none is about any shard.
	rules *placement
	// sc holds the per-shard slices, returned to its pool when Step ends.
	sc *scratch
}

// readState validates s and indexes it, or returns an error wrapping
// ErrInvalidInput that lists every problem (up to maxProblems): empty or
// duplicate member and shard IDs, Holders of another length than Shards, a
// key of an empty worker ID, a key naming a shard outside the set or naming
// one shard twice.
func readState(s State, sc *scratch) (*stepInput, error) {
	shards, index := indexShards(s.Shards)
	var check []shard.ID // the shards to sort and check: none in the numbered form
	if index.byID != nil {
		check = s.Shards
	}
	members, sorted, problems := sortIDs(s.Members, check)
	if index.byID != nil {
		shards = sorted
		for i, id := range shards {
			index.byID[id] = int32(i)
		}
	}
	in := &stepInput{
		now:     s.Now,
		frozen:  s.Frozen,
		shards:  shards,
		members: members,
		ids:     make([]string, len(members)),
		sc:      sc,
		holder:  sc.int32s(len(shards)),
		flags:   sc.uint8s(len(shards)),
		keys:    make([]Assignment, len(members)),
		sets:    make([][]int32, len(members)),
		took:    make([]bool, len(members)),
		keyed:   make([]bool, len(members)),
		standby: make([][]int32, len(members)),
	}
	member := make(map[string]int32, len(members))
	for m, mem := range members {
		in.ids[m] = mem.ID
		member[mem.ID] = int32(m)
	}
	problems = in.readKeys(s.Assigned, index, member, problems)
	problems = in.readHolders(s, index, member, problems)
	for m, a := range in.keys {
		for _, id := range a.Free {
			if i, ok := index.find(id); ok && in.holder[i] == int32(m) {
				in.took[m] = true
				break
			}
		}
	}
	in.load, problems = readLoads(s.Loads, index, len(shards), problems)
	if problems = checkRules(s.Rules, problems); len(problems) > 0 {
		return nil, invalid(problems)
	}
	in.rules = compileRules(shards, members, s.Rules)
	return in, nil
}

// readKeys reads the assignment keys into in.keys and in.sets (live
// members') and in.dead, flags the shards of dead workers' keys orphaned,
// and sets in.holder[i] to the live member whose key lists shard i, or -1:
// a guess that readHolders checks. It returns problems with those of the
// keys added.
func (in *stepInput) readKeys(assigned map[string]Assignment, index shardIndex, member map[string]int32, problems []string) []string {
	for i := range in.holder {
		in.holder[i] = -1
	}
	total := 0
	for _, a := range assigned {
		total += len(a.Shards)
	}
	backing := in.sc.int32s(total)[:0] // one buffer for every key's set
	for _, w := range slices.Sorted(maps.Keys(assigned)) {
		a := assigned[w]
		if w == "" {
			problems = append(problems, "assignment key of an empty worker ID")
			continue
		}
		start := len(backing)
		for _, id := range a.Shards {
			if i, ok := index.find(id); ok {
				backing = append(backing, i)
			} else {
				problems = append(problems, fmt.Sprintf("worker %q is assigned unknown shard %q", w, id))
			}
		}
		set := backing[start:len(backing):len(backing)]
		if !slices.IsSorted(set) {
			slices.Sort(set)
		}
		for k := 1; k < len(set); k++ {
			if set[k] == set[k-1] && (k < 2 || set[k-2] != set[k]) {
				problems = append(problems, fmt.Sprintf("worker %q is assigned shard %q more than once", w, in.shards[set[k]]))
			}
		}
		if m, live := member[w]; live {
			in.keys[m], in.sets[m], in.keyed[m] = a, set, true
			for _, id := range a.Standby {
				if i, ok := index.find(id); ok {
					in.standby[m] = append(in.standby[m], i)
				}
			}
			slices.Sort(in.standby[m])
			for _, i := range set {
				in.holder[i] = m
			}
		} else {
			in.dead = append(in.dead, w)
			for _, i := range set {
				in.flags[i] |= orphaned
			}
		}
	}
	return problems
}

// readHolders sets in.holder from s.Holders, and flags orphaned the shards
// held by a worker that is not live. It returns problems with Holders'
// added. On entry in.holder[i] is the live member whose key lists shard i
// (readKeys): the holder of nearly every shard of a fleet at rest. That
// member's ID is compared first and only another holder is looked up by
// ID: in a state derived from one listing the holder and the member ID
// are one string and the comparison stops at the pointers, where a lookup
// in the map of members would cost a hash and a probe a shard.
func (in *stepInput) readHolders(s State, index shardIndex, member map[string]int32, problems []string) []string {
	switch len(s.Holders) {
	case len(s.Shards):
	case 0:
		for i := range in.holder {
			in.holder[i] = -1
		}
		return problems
	default:
		return append(problems, fmt.Sprintf("%d holders for %d shards (want one for each shard, or none)", len(s.Holders), len(s.Shards)))
	}
	// Each i is visited once: a shard set with a duplicate is invalid.
	for j, h := range s.Holders {
		i := int32(j) // the numbered form's shards are s.Shards
		if index.byID != nil {
			i = index.byID[s.Shards[j]]
		}
		switch guess := in.holder[i]; {
		case h == "":
			in.holder[i] = -1
		case guess >= 0 && in.ids[guess] == h:
		default:
			m, live := member[h]
			if !live {
				m = -1
				in.flags[i] |= orphaned
			}
			in.holder[i] = m
		}
	}
	return problems
}

// shardIndex finds a shard's position in the sorted shard set.
//
// The shard set of every fleet is a Config's IDs: a stem and the shard's
// number, zero-padded to one width, in order. Such a set is recognised
// (in one pass, without sorting) and an ID's position is read from its
// digits; any other set is sorted and indexed by a map. The difference is
// only speed: at 100,000 shards building and probing a map of that size
// costs more than a whole steady step may.
type shardIndex struct {
	stem  string // the common prefix, up to and including the last '-'
	width int    // digits after the stem
	n     int
	byID  map[shard.ID]int32 // nil for the stem-and-number form
}

// indexShards returns the shards sorted and their index. In the
// stem-and-number form they are returned as given (they are sorted and
// distinct already); otherwise the index's map is made but left empty for
// the caller to fill from the sorted, checked copy.
func indexShards(ss []shard.ID) ([]shard.ID, shardIndex) {
	if ix, ok := numbered(ss); ok {
		return ss, ix
	}
	return nil, shardIndex{byID: make(map[shard.ID]int32, len(ss))}
}

// numbered reports whether ss[i] is stem + i padded to one width, for
// every i.
func numbered(ss []shard.ID) (shardIndex, bool) {
	if len(ss) == 0 {
		return shardIndex{}, false
	}
	first := string(ss[0])
	cut := strings.LastIndexByte(first, '-') + 1
	ix := shardIndex{stem: first[:cut], width: len(first) - cut, n: len(ss)}
	if ix.width == 0 || ix.width > 9 {
		return shardIndex{}, false
	}
	if float64(len(ss)) > math.Pow10(ix.width) {
		return shardIndex{}, false // the numbers would not fit the width
	}
	// Each ID is compared whole with the one expected, kept as text and
	// counted up in place: one comparison an ID, where find would compare
	// its stem and then read its digits one by one.
	want := []byte(first[:cut] + strings.Repeat("0", ix.width))
	for _, id := range ss {
		if string(id) != string(want) {
			return shardIndex{}, false
		}
		for k := len(want) - 1; k >= cut; k-- {
			if want[k] < '9' {
				want[k]++
				break
			}
			want[k] = '0'
		}
	}
	return ix, true
}

// find returns the position of id in the shard set.
func (ix shardIndex) find(id shard.ID) (int32, bool) {
	if ix.byID != nil {
		i, ok := ix.byID[id]
		return i, ok
	}
	if len(id) != len(ix.stem)+ix.width || !strings.HasPrefix(string(id), ix.stem) {
		return -1, false
	}
	var k int32
	for _, c := range []byte(id[len(ix.stem):]) {
		if c < '0' || c > '9' {
			return -1, false
		}
		k = k*10 + int32(c-'0')
	}
	return k, int(k) < ix.n
}

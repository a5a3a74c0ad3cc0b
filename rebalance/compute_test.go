package rebalance

import (
	"cmp"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

func ids(n int) []shard.ID { return shard.Config{Shards: n}.IDs() }

func members(names ...string) []Member {
	ms := make([]Member, len(names))
	for i, n := range names {
		ms[i] = Member{ID: n, Weight: 1}
	}
	return ms
}

// own maps shards[i] to holders[i]; "" leaves it out.
func own(shards []shard.ID, holders ...string) map[shard.ID]string {
	o := map[shard.ID]string{}
	for i, h := range holders {
		if h != "" {
			o[shards[i]] = h
		}
	}
	return o
}

func TestComputeInvalidInput(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want []string // substrings of the message
	}{
		{"duplicate member", Input{Shards: ids(2), Members: members("a", "b", "a")}, []string{`duplicate member ID "a"`}},
		{"triplicate member named once", Input{Members: members("a", "a", "a")}, []string{`duplicate member ID "a"`}},
		{"empty member ID", Input{Shards: ids(2), Members: members("a", "")}, []string{"empty member ID"}},
		{"duplicate shard", Input{Shards: []shard.ID{"s1", "s2", "s1"}, Members: members("a")}, []string{`duplicate shard ID "s1"`}},
		{"empty shard ID", Input{Shards: []shard.ID{"s1", ""}, Members: members("a")}, []string{"empty shard ID"}},
		{"every problem at once", Input{Shards: []shard.ID{"x", "x", "y", "y"}, Members: members("b", "", "b")},
			[]string{"empty member ID", `duplicate member ID "b"`, `duplicate shard ID "x"`, `duplicate shard ID "y"`}},
		{"long lists are cut", Input{Shards: slices.Concat(ids(20), ids(20)), Members: members("a")},
			[]string{`duplicate shard ID "stream/shard-000"`, "and 12 more"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compute(tt.in)
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("err = %v, want ErrInvalidInput", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if p.Target != nil || p.Moves != nil {
				t.Errorf("plan with an error: %+v", p)
			}
		})
	}
	if tt := tests[len(tests)-1]; strings.Count(mustErr(t, tt.in), "duplicate") != maxProblems {
		t.Errorf("want %d problems listed", maxProblems)
	}
}

func mustErr(t *testing.T, in Input) string {
	t.Helper()
	_, err := Compute(in)
	if err == nil {
		t.Fatal("no error")
	}
	return err.Error()
}

// TestComputeSmall checks hand-worked cases: capacities, who keeps what, and
// the moves.
func TestComputeSmall(t *testing.T) {
	s := ids(6)
	tests := []struct {
		name      string
		in        Input
		caps      map[string]int
		moves     []Move // nil: not checked beyond checkPlan
		wantMoves int
	}{
		{
			name: "no members: nothing to plan",
			in:   Input{Shards: s, Owners: own(s, "ghost")},
			caps: map[string]int{},
		},
		{
			name: "no shards: zero quotas",
			in:   Input{Members: members("a", "b")},
			caps: map[string]int{"a": 0, "b": 0},
		},
		{
			name:      "single member acquires every free shard",
			in:        Input{Shards: s[:3], Members: members("a")},
			caps:      map[string]int{"a": 3},
			moves:     []Move{{s[0], "", "a"}, {s[1], "", "a"}, {s[2], "", "a"}},
			wantMoves: 3,
		},
		{
			name: "balanced and sticky: nothing moves",
			in:   Input{Shards: s, Members: members("a", "b", "c"), Owners: own(s, "a", "b", "c", "a", "b", "c")},
			caps: map[string]int{"a": 2, "b": 2, "c": 2},
		},
		{
			name:      "dead and empty holders free their shards",
			in:        Input{Shards: s[:2], Members: members("a"), Owners: map[shard.ID]string{s[0]: "ghost", s[1]: "", "other": "a"}},
			caps:      map[string]int{"a": 2},
			moves:     []Move{{s[0], "", "a"}, {s[1], "", "a"}},
			wantMoves: 2,
		},
		{
			name: "a leave frees only the leaver's shards",
			// c left; a and b keep theirs and split c's two.
			in:        Input{Shards: s, Members: members("a", "b"), Owners: own(s, "a", "b", "c", "a", "b", "c")},
			caps:      map[string]int{"a": 3, "b": 3},
			wantMoves: 2,
		},
		{
			name: "the +1 goes to the member that would otherwise shed",
			// 5 shards, 2 members: a holds 3, so a gets the ceiling.
			in:   Input{Shards: s[:5], Members: members("a", "b"), Owners: own(s, "a", "a", "a", "b", "b")},
			caps: map[string]int{"a": 3, "b": 2},
		},
		{
			name: "a join takes what the joiner receives",
			// 4 shards, a and b hold 2 each, c joins: quotas 2,1,1 or 1,2,1.
			in:        Input{Shards: s[:4], Members: members("a", "b", "c"), Owners: own(s, "a", "a", "b", "b")},
			wantMoves: 1,
		},
		{
			name: "weights split exactly",
			in:   Input{Shards: s, Members: []Member{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}, {ID: "c", Weight: 3}}},
			caps: map[string]int{"a": 1, "b": 2, "c": 3}, wantMoves: 6,
		},
		{
			name: "weights ≤ 0 count as 1",
			in:   Input{Shards: s[:4], Members: []Member{{ID: "a", Weight: 0}, {ID: "b", Weight: -7}}},
			caps: map[string]int{"a": 2, "b": 2}, wantMoves: 4,
		},
		{
			name: "a huge weight is clamped, not overflowed",
			// shares 10·2³²/(2³²+1) ≈ 9.99 and 10/(2³²+1) ≈ 0: a gets the extra slot.
			in:   Input{Shards: ids(10), Members: []Member{{ID: "a", Weight: math.MaxInt}, {ID: "b", Weight: 1}}},
			caps: map[string]int{"a": 10, "b": 0}, wantMoves: 10,
		},
		{
			name:      "a draining member hands everything off",
			in:        Input{Shards: s[:3], Members: []Member{{ID: "a", Draining: true}, {ID: "b"}}, Owners: own(s, "a", "a", "b")},
			caps:      map[string]int{"a": 0, "b": 3},
			moves:     []Move{{s[0], "a", "b"}, {s[1], "a", "b"}},
			wantMoves: 2,
		},
		{
			name: "when every member drains, draining is ignored",
			in:   Input{Shards: s[:4], Members: []Member{{ID: "a", Draining: true}, {ID: "b", Draining: true}}, Owners: own(s, "a", "a", "b", "b")},
			caps: map[string]int{"a": 2, "b": 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compute(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkPlan(tt.in, p); err != nil {
				t.Fatal(err)
			}
			if tt.caps != nil && !maps.Equal(p.Capacity, tt.caps) {
				t.Errorf("capacity %v, want %v", p.Capacity, tt.caps)
			}
			if tt.moves != nil && !slices.Equal(p.Moves, tt.moves) {
				t.Errorf("moves %v, want %v", p.Moves, tt.moves)
			}
			if len(p.Moves) != tt.wantMoves {
				t.Errorf("%d moves, want %d: %v", len(p.Moves), tt.wantMoves, p.Moves)
			}
		})
	}
}

// TestShedsLowestScores: a member over its quota keeps its highest-scoring
// shards, so every worker agrees which ones it will release.
func TestShedsLowestScores(t *testing.T) {
	s := ids(8)
	in := Input{Shards: s, Members: members("a", "b"), Owners: own(s, "a", "a", "a", "a", "a", "a", "a", "a")}
	p, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	var sc scorer
	byScore := slices.Clone(s)
	slices.SortFunc(byScore, func(x, y shard.ID) int {
		return cmp.Compare(sc.score(y, "a"), sc.score(x, "a"))
	})
	for i, id := range byScore {
		if want := map[bool]string{true: "a", false: "b"}[i < 4]; p.Target[id] != want {
			t.Errorf("shard %s (score rank %d) targeted to %s, want %s", id, i, p.Target[id], want)
		}
	}
}

func TestFor(t *testing.T) {
	p := Plan{Moves: []Move{
		{"s1", "", "b"},  // free, b acquires
		{"s2", "a", "b"}, // a releases; b waits for it
		{"s3", "", "a"},  // free, a acquires
		{"s4", "a", "c"}, // a releases
		{"s5", "", "b"},
	}}
	tests := []struct {
		worker           string
		acquire, release []shard.ID
	}{
		{"a", []shard.ID{"s3"}, []shard.ID{"s2", "s4"}},
		{"b", []shard.ID{"s1", "s5"}, nil},
		{"c", nil, nil},
		{"nobody", nil, nil},
	}
	for _, tt := range tests {
		acq, rel := p.For(tt.worker)
		if !slices.Equal(acq, tt.acquire) || !slices.Equal(rel, tt.release) {
			t.Errorf("For(%q) = %v, %v; want %v, %v", tt.worker, acq, rel, tt.acquire, tt.release)
		}
	}
}

func TestSpreadAndCounts(t *testing.T) {
	for _, tt := range []struct {
		counts map[string]int
		want   int
	}{
		{nil, 0},
		{map[string]int{"a": 7}, 0},
		{map[string]int{"a": 3, "b": 5, "c": 4}, 2},
		{map[string]int{"a": 0, "b": 2}, 2},
	} {
		if got := Spread(tt.counts); got != tt.want {
			t.Errorf("Spread(%v) = %d, want %d", tt.counts, got, tt.want)
		}
	}
	p := Plan{Target: map[shard.ID]string{"s1": "a", "s2": "a"}, Capacity: map[string]int{"a": 2, "b": 0}}
	if got := p.Counts(); !maps.Equal(got, map[string]int{"a": 2, "b": 0}) {
		t.Errorf("Counts() = %v: members with no shards must be included", got)
	}
}

// TestComputeDoesNotModifyInput: the caller's slices stay in their order.
func TestComputeDoesNotModifyInput(t *testing.T) {
	in := Input{Shards: []shard.ID{"s2", "s1"}, Members: members("b", "a"), Owners: map[shard.ID]string{"s1": "b"}}
	if _, err := Compute(in); err != nil {
		t.Fatal(err)
	}
	if in.Shards[0] != "s2" || in.Members[0].ID != "b" || len(in.Owners) != 1 {
		t.Errorf("input modified: %+v", in)
	}
}

package rebalance

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

func ids(n int) []shard.ID { return shard.Config{Shards: n}.IDs() }

// members returns members of weight 1 with the given IDs.
func members(names ...string) []Member {
	ms := make([]Member, len(names))
	for i, n := range names {
		ms[i] = Member{ID: n, Weight: 1}
	}
	return ms
}

// live returns members of weight 1 whose session is "<id>#1".
func live(names ...string) []Member {
	ms := members(names...)
	for i := range ms {
		ms[i].Session = shard.SessionID(ms[i].ID + "#1")
	}
	return ms
}

// key returns an assignment of shards[i] for each i, unchanged since epoch.
func key(shards []shard.ID, is ...int) Assignment {
	a := Assignment{Since: epoch}
	for _, i := range is {
		a.Shards = append(a.Shards, shards[i])
	}
	return a
}

// aligned returns holders (by shard) as State.Holders for shards.
func aligned(shards []shard.ID, holders map[shard.ID]string) []string {
	hs := make([]string, len(shards))
	for i, id := range shards {
		hs[i] = holders[id]
	}
	return hs
}

// holderMap returns the holders of s by shard, free shards left out.
func holderMap(s State) map[shard.ID]string {
	m := make(map[shard.ID]string, len(s.Holders))
	for i, h := range s.Holders {
		if h != "" {
			m[s.Shards[i]] = h
		}
	}
	return m
}

// hold makes h the holder of shard id in s ("" frees it), making
// s.Holders if s has none.
func hold(s *State, id shard.ID, h string) {
	if s.Holders == nil {
		s.Holders = make([]string, len(s.Shards))
	}
	s.Holders[slices.Index(s.Shards, id)] = h
}

// mustStep runs Step and checks the decision's invariants.
func mustStep(t *testing.T, s State, p Policy) Decision {
	t.Helper()
	d, err := Step(s, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkDecision(s, p, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestStepInvalidInput(t *testing.T) {
	s := ids(3)
	tests := []struct {
		name  string
		state State
		want  []string
	}{
		{"duplicate member", State{Shards: s, Members: live("a", "b", "a")}, []string{`duplicate member ID "a"`}},
		{"triplicate member named once", State{Members: live("a", "a", "a")}, []string{`duplicate member ID "a"`}},
		{"empty member ID", State{Shards: s, Members: live("a", "")}, []string{"empty member ID"}},
		{"duplicate shard", State{Shards: []shard.ID{"x", "y", "x"}, Members: live("a")}, []string{`duplicate shard ID "x"`}},
		{"empty shard ID", State{Shards: []shard.ID{"x", ""}, Members: live("a")}, []string{"empty shard ID"}},
		{"key of an empty worker", State{Shards: s, Assigned: map[string]Assignment{"": key(s, 0)}}, []string{"assignment key of an empty worker ID"}},
		{"unknown shard in a key", State{Shards: s, Members: live("a"), Assigned: map[string]Assignment{"a": {Shards: []shard.ID{s[0], "nope"}}}},
			[]string{`worker "a" is assigned unknown shard "nope"`}},
		{"unknown shard in a dead worker's key", State{Shards: s, Assigned: map[string]Assignment{"gone": {Shards: []shard.ID{"stream/shard-999"}}}},
			[]string{`worker "gone" is assigned unknown shard "stream/shard-999"`}},
		{"a shard twice in a key", State{Shards: s, Members: live("a"), Assigned: map[string]Assignment{"a": key(s, 2, 0, 2, 2)}},
			[]string{`worker "a" is assigned shard "stream/shard-002" more than once`}},
		{"every problem at once", State{Shards: []shard.ID{"x", "x"}, Members: live("b", "b"), Assigned: map[string]Assignment{"b": {Shards: []shard.ID{"y"}}}},
			[]string{`duplicate member ID "b"`, `duplicate shard ID "x"`, `worker "b" is assigned unknown shard "y"`}},
		{"holders not one for each shard", State{Shards: s, Members: live("a"), Holders: []string{"a"}}, []string{"1 holders for 3 shards"}},
		{"holders not one for each shard, a worker returning", State{Now: epoch, Shards: s, Members: live("a"), Holders: []string{"a", "", "", ""},
			Returning: map[string]time.Time{"b": epoch.Add(time.Minute)}}, []string{"4 holders for 3 shards"}},
		{"long lists are cut", State{Shards: ids(20), Assigned: map[string]Assignment{"a": {Shards: slices.Repeat([]shard.ID{"q"}, 12)}}},
			[]string{"and 4 more"}},
		{"long lists of shards are cut", State{Shards: slices.Concat(ids(20), ids(20)), Members: live("a")},
			[]string{`duplicate shard ID "stream/shard-000"`, "and 12 more"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Step(tt.state, Policy{})
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("err = %v, want ErrInvalidInput", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if !reflect.DeepEqual(d, Decision{}) {
				t.Errorf("decision with an error: %+v", d)
			}
		})
	}
	// Each duplicate is named once, and a list is cut after maxProblems.
	for _, tc := range []struct {
		state State
		what  string
		want  int
	}{
		{State{Members: live("a", "a", "a")}, "duplicate member ID", 1},
		{State{Shards: slices.Concat(ids(20), ids(20)), Members: live("a")}, "duplicate shard ID", maxProblems},
	} {
		if _, err := Step(tc.state, Policy{}); err == nil || strings.Count(err.Error(), tc.what) != tc.want {
			t.Errorf("error %v: want %q %d times", err, tc.what, tc.want)
		}
	}
}

// TestStepSmall walks through each rule on hand-made fleets.
func TestStepSmall(t *testing.T) {
	s := ids(6)
	now := epoch.Add(time.Hour)
	p := Policy{StuckAfter: time.Second}

	t.Run("cold start places every shard and starts the waits", func(t *testing.T) {
		d := mustStep(t, State{Now: now, Shards: s[:4], Members: live("a", "b")}, p)
		if len(d.Assign) != 2 || len(d.Moves) != 4 || !d.Wake.Equal(now.Add(time.Second)) {
			t.Fatalf("decision %+v", d)
		}
		for w, a := range d.Assign {
			if len(a.Shards) != 2 || !a.Since.Equal(now) || a.Waiting != 2 || !a.WaitingSince.Equal(now) || a.Stuck {
				t.Errorf("key of %s: %+v", w, a)
			}
		}
		for _, mv := range d.Moves {
			if mv.From != "" || mv.Reason != shard.ReasonFree {
				t.Errorf("move %+v", mv)
			}
		}
	})

	t.Run("a join moves a shard in two steps", func(t *testing.T) {
		st := State{Now: now, Shards: s[:4], Members: live("a", "b", "c"),
			Holders:  []string{"a", "a", "b", "b"},
			Assigned: map[string]Assignment{"a": key(s, 0, 1), "b": key(s, 2, 3)}}
		d := mustStep(t, st, p)
		if len(d.Moves) != 1 || d.Moves[0].To != "c" || d.Moves[0].Reason != shard.ReasonRebalance || len(d.Assign) != 1 {
			t.Fatalf("first step: %+v", d)
		}
		from, moved := d.Moves[0].From, d.Moves[0].Shard
		if _, c := d.Assign["c"]; c || slices.Contains(d.Assign[from].Shards, moved) {
			t.Fatalf("the shard went to c before it was released: %+v", d.Assign)
		}
		st = applied(st, d)
		if again := mustStep(t, st, p); !quiet(again) {
			t.Fatalf("stepping again before the release: %+v", again)
		}
		hold(&st, moved, "") // released
		d = mustStep(t, st, p)
		if want := []Transfer{{moved, "", "c", shard.ReasonFree}}; !slices.Equal(d.Moves, want) || !slices.Equal(d.Assign["c"].Shards, []shard.ID{moved}) {
			t.Fatalf("second step: %+v", d)
		}
	})

	t.Run("a held shard leaves another worker's key", func(t *testing.T) {
		// s0 held by a but in b's key only: b must not wait on it; a keeps it.
		st := State{Now: now, Shards: s[:2], Members: live("a", "b"), Holders: []string{"a", ""},
			Assigned: map[string]Assignment{"b": key(s, 0, 1)}}
		d := mustStep(t, st, p)
		if !slices.Equal(d.Assign["a"].Shards, s[:1]) || !slices.Equal(d.Assign["b"].Shards, s[1:2]) || len(d.Moves) != 0 {
			t.Fatalf("decision %+v", d)
		}
	})

	t.Run("a free shard in two keys stays in one", func(t *testing.T) {
		st := State{Now: now, Shards: s[:2], Members: live("a", "b"),
			Assigned: map[string]Assignment{"a": key(s, 0, 1), "b": key(s, 0, 1)}}
		d := mustStep(t, st, p)
		a, b := d.Assign["a"].Shards, d.Assign["b"].Shards
		if len(a) != 1 || len(b) != 1 || a[0] == b[0] {
			t.Fatalf("keys a %v, b %v", a, b)
		}
	})

	t.Run("a dead worker's key is deleted and its shards orphaned", func(t *testing.T) {
		st := State{Now: now, Shards: s[:2], Members: live("a"), Holders: []string{"gone", "gone"},
			Assigned: map[string]Assignment{"gone": key(s, 0, 1), "zombie": {}}}
		d := mustStep(t, st, p)
		if !slices.Equal(d.Delete, []string{"gone", "zombie"}) || len(d.Moves) != 2 || d.Moves[0].Reason != shard.ReasonOrphaned {
			t.Fatalf("decision %+v", d)
		}
	})

	t.Run("a stuck worker is given nothing until its verdict ends, then one shard on probation", func(t *testing.T) {
		st := State{Now: now, Shards: s[:4], Members: live("a", "b")}
		st = applied(st, mustStep(t, st, p))
		for _, id := range st.Assigned["a"].Shards {
			hold(&st, id, "a") // a takes its shards; b takes none
		}
		st.Now = now.Add(999 * time.Millisecond)
		d := mustStep(t, st, p)
		if _, b := d.Assign["b"]; b || !d.Wake.Equal(now.Add(time.Second)) {
			t.Fatalf("b judged before StuckAfter: %+v", d)
		}
		st = applied(st, d)
		st.Now = now.Add(time.Second)
		d = mustStep(t, st, p)
		b := d.Assign["b"]
		if !b.Stuck || b.StuckSession != "b#1" || b.Verdicts != 1 || !b.StuckSince.Equal(st.Now) || len(b.Shards) != 0 ||
			len(d.Moves) != 2 || d.Moves[0].Reason != shard.ReasonStuck || d.Moves[0].To != "a" {
			t.Fatalf("verdict: %+v", d)
		}
		verdictEnds := st.Now.Add(2 * time.Second) // StuckAfter·2^1
		st = applied(st, d)
		for _, mv := range d.Moves {
			hold(&st, mv.Shard, "a")
		}
		st.Now = verdictEnds.Add(-time.Millisecond)
		d = mustStep(t, st, p)
		if _, b := d.Assign["b"]; b || len(d.Moves) != 0 || d.Assign["a"].Waiting != 0 || !d.Wake.Equal(verdictEnds) {
			t.Fatalf("during the verdict: %+v", d) // a's wait ends; b gets nothing; wake when the verdict ends
		}
		st = applied(st, d)

		// Probation: b is no longer stuck and may be given one shard more
		// than it holds (a hand-off from a, as a holds them all).
		st.Now = verdictEnds
		probation := st
		probation.Holders = slices.Clone(st.Holders)
		d = mustStep(t, st, p)
		if b := d.Assign["b"]; b.Stuck || b.Verdicts != 1 || len(d.Moves) != 1 || d.Moves[0].From != "a" || d.Moves[0].To != "b" {
			t.Fatalf("probation: %+v", d)
		}
		test := d.Moves[0].Shard
		st = applied(st, d)
		hold(&st, test, "") // a releases it; the next step places it with b
		d = mustStep(t, st, p)
		if b := d.Assign["b"]; !slices.Equal(b.Shards, []shard.ID{test}) || b.Waiting != 1 || b.Verdicts != 1 {
			t.Fatalf("probation's shard: %+v", d)
		}
		st = applied(st, d)
		onProbation := st
		onProbation.Holders = slices.Clone(st.Holders)

		// b takes it: the probation ends, and b is given its share.
		hold(&st, test, "b")
		d = mustStep(t, st, p)
		if b := d.Assign["b"]; b.Stuck || b.Verdicts != 0 || !b.StuckSince.IsZero() || len(d.Moves) != 1 || d.Moves[0].To != "b" {
			t.Fatalf("progress: %+v", d)
		}

		// b takes nothing for StuckAfter: the next verdict, twice as long.
		st = onProbation
		st.Now = st.Now.Add(time.Second)
		d = mustStep(t, st, p)
		if b := d.Assign["b"]; !b.Stuck || b.Verdicts != 2 || len(b.Shards) != 0 || len(d.Moves) != 1 || d.Moves[0].Reason != shard.ReasonStuck ||
			!b.StuckSince.Equal(st.Now) {
			t.Fatalf("second verdict: %+v", d)
		}

		// A restart (a new session) clears the verdict at once.
		st = probation
		st.Members[1].Session = "b#2"
		d = mustStep(t, st, p)
		if b := d.Assign["b"]; b.Stuck || b.Verdicts != 0 || b.StuckSession != "" || len(d.Moves) != 2 || d.Moves[1].To != "b" {
			t.Fatalf("restart: %+v", d)
		}
	})

	t.Run("in load balance a worker on probation is given the lightest free shard", func(t *testing.T) {
		loads := map[shard.ID]float64{s[0]: 5, s[1]: 1, s[2]: 3, s[3]: 1}
		st := State{Now: now, Shards: s[:4], Members: live("a", "b"), Loads: loads,
			Assigned: map[string]Assignment{"b": {Stuck: true, StuckSession: "b#1", Verdicts: 1, StuckSince: now.Add(-2 * time.Second)}}}
		d := mustStep(t, st, p)
		if b := d.Assign["b"]; b.Stuck || b.Verdicts != 1 || !slices.Equal(b.Shards, []shard.ID{s[1]}) || len(d.Assign["a"].Shards) != 3 {
			t.Fatalf("decision %+v", d)
		}
		if d2 := mustStep(t, applied(st, d), p); len(d2.Assign) != 0 || len(d2.Moves) != 0 {
			t.Fatalf("read back: %+v", d2)
		}
	})

	t.Run("a worker taking its shards slowly is not stuck", func(t *testing.T) {
		st := State{Now: now, Shards: s, Members: live("a")}
		st = applied(st, mustStep(t, st, p))
		for k, id := range s {
			st.Now = now.Add(time.Duration(k+1) * 900 * time.Millisecond)
			d := mustStep(t, st, p)
			if d.Assign["a"].Stuck {
				t.Fatalf("judged stuck after taking %d of 6: %+v", k, d)
			}
			st = applied(st, d)
			hold(&st, id, "a")
		}
		d := mustStep(t, st, p)
		if a := d.Assign["a"]; a.Waiting != 0 || !a.WaitingSince.IsZero() || !d.Wake.IsZero() {
			t.Fatalf("all taken: the wait must end: %+v", d)
		}
		if d := mustStep(t, applied(st, d), p); !quiet(d) {
			t.Fatalf("at rest: %+v", d)
		}
	})

	t.Run("hand-offs wait under the cap, drains first", func(t *testing.T) {
		st := State{Now: now, Shards: s, Members: append(live("a", "b"), Member{ID: "d", Weight: 1, Draining: true, Session: "d#1"}),
			Holders:  []string{"a", "a", "a", "a", "d", "d"},
			Assigned: map[string]Assignment{"a": key(s, 0, 1, 2, 3), "d": key(s, 4, 5)}}
		capped := Policy{StuckAfter: time.Second, MaxMovesInFlight: 2}
		d := mustStep(t, st, capped)
		if len(d.Moves) != 2 || d.Moves[0].From != "d" || d.Moves[1].From != "d" || d.Moves[0].Reason != shard.ReasonDrain {
			t.Fatalf("first wave: %+v", d.Moves)
		}
		st = applied(st, d)
		if d := mustStep(t, st, capped); len(d.Moves) != 0 {
			t.Fatalf("started more while two are in flight: %+v", d.Moves)
		}
		hold(&st, s[4], "") // one released: room for one more
		d = mustStep(t, st, capped)
		if len(d.Moves) != 2 || d.Moves[0].From != "a" || d.Moves[1].Shard != s[4] {
			t.Fatalf("second wave: %+v", d.Moves)
		}
	})

	t.Run("when every member is stuck free shards wait in no key", func(t *testing.T) {
		st := State{Now: now, Shards: s[:2], Members: live("a"), Holders: []string{"a", ""},
			Assigned: map[string]Assignment{"a": {Shards: s[:1], Stuck: true, StuckSession: "a#1", Verdicts: 1, StuckSince: now}}}
		if d := mustStep(t, st, p); len(d.Assign) != 0 || len(d.Moves) != 0 || !d.Wake.Equal(now.Add(2*time.Second)) {
			t.Fatalf("decision %+v", d)
		}
	})

	t.Run("a stuck mark without a time is given one", func(t *testing.T) {
		st := State{Now: now, Shards: s[:2], Members: live("a"), Holders: []string{"a", ""},
			Assigned: map[string]Assignment{"a": {Shards: s[:1], Stuck: true, StuckSession: "a#1"}}}
		d := mustStep(t, st, p)
		if a := d.Assign["a"]; !a.Stuck || a.Verdicts != 1 || !a.StuckSince.Equal(now) || len(d.Moves) != 0 {
			t.Fatalf("decision %+v", d)
		}
		if d2 := mustStep(t, applied(st, d), p); len(d2.Assign) != 0 || !d2.Wake.Equal(d.Wake) {
			t.Fatalf("read back: %+v", d2)
		}
	})

	t.Run("a wait stamped in the future restarts now", func(t *testing.T) {
		st := State{Now: now, Shards: s[:1], Members: live("a"),
			Assigned: map[string]Assignment{"a": {Shards: s[:1], Waiting: 1, WaitingSince: now.Add(time.Hour)}}}
		d := mustStep(t, st, p)
		if a := d.Assign["a"]; a.Waiting != 1 || !a.WaitingSince.Equal(now) || !d.Wake.Equal(now.Add(time.Second)) {
			t.Fatalf("decision %+v", d)
		}
	})
}

// TestStepDoesNotModifyInput: the caller's state is left as it was.
func TestStepDoesNotModifyInput(t *testing.T) {
	s := ids(4)
	st := State{Now: epoch, Shards: []shard.ID{s[3], s[1], s[0], s[2]}, Members: live("b", "a"),
		Holders:  []string{"", "a", "b", "gone"}, // s[3], s[1], s[0], s[2]
		Assigned: map[string]Assignment{"a": key(s, 3, 0), "gone": key(s, 2)}}
	before := shuffledState(caseRand(0), st)
	for w, a := range st.Assigned {
		before.Assigned[w] = Assignment{Shards: slices.Clone(a.Shards), Since: a.Since}
	}
	before.Shards, before.Members, before.Holders = slices.Clone(st.Shards), slices.Clone(st.Members), slices.Clone(st.Holders)
	mustStep(t, st, Policy{})
	if !reflect.DeepEqual(st.Shards, before.Shards) || !reflect.DeepEqual(st.Members, before.Members) ||
		!slices.Equal(st.Holders, before.Holders) || !reflect.DeepEqual(st.Assigned, before.Assigned) {
		t.Errorf("input modified: %+v", st)
	}
}

func TestShardIndex(t *testing.T) {
	for _, tc := range []struct {
		name     string
		shards   []shard.ID
		numbered bool
	}{
		{"a Config's IDs", shard.Config{Shards: 1000}.IDs(), true},
		{"another stem and width", []shard.ID{"q-0", "q-1", "q-2"}, true},
		{"out of order", []shard.ID{"q-1", "q-0"}, false},
		{"a gap", []shard.ID{"q-0", "q-2"}, false},
		{"mixed widths", []shard.ID{"q-0", "q-01"}, false},
		{"no digits", []shard.ID{"q-", "q-"}, false},
		{"not from zero", []shard.ID{"q-1", "q-2"}, false},
		{"a sign", []shard.ID{"q-0", "q+1"}, false},
		{"past the width", []shard.ID{"q-0", "q-1", "q-2", "q-3", "q-4", "q-5", "q-6", "q-7", "q-8", "q-9", "q-0"}, false},
		{"empty", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ix := indexShards(tc.shards)
			if (ix.byID == nil) != tc.numbered {
				t.Fatalf("numbered = %v, want %v", ix.byID == nil, tc.numbered)
			}
			if !tc.numbered {
				return
			}
			for i, id := range tc.shards {
				if k, ok := ix.find(id); !ok || int(k) != i {
					t.Errorf("find(%q) = %d, %v; want %d", id, k, ok, i)
				}
			}
			for _, id := range []shard.ID{"", "q-", "q-9999999", "q-00x", tc.shards[0] + "0", "x" + tc.shards[0][1:]} {
				if k, ok := ix.find(id); ok && tc.shards[k] != id {
					t.Errorf("find(%q) = %d, the position of %q", id, k, tc.shards[k])
				}
			}
		})
	}
}

func TestDefaultMaxMovesInFlight(t *testing.T) {
	for _, tc := range []struct{ shards, members, want int }{
		{0, 0, 16}, {128, 12, 16}, {10_000, 100, 100}, {100_000, 1000, 100}, {100_000, 1001, 100}, {4096, 1, 4096},
	} {
		if got := DefaultMaxMovesInFlight(tc.shards, tc.members); got != tc.want {
			t.Errorf("DefaultMaxMovesInFlight(%d, %d) = %d, want %d", tc.shards, tc.members, got, tc.want)
		}
	}
}

// TestStepStuckIsAboutProgressAndSession: two ways a healthy worker can
// look stuck and must not be judged so. A worker that took the free shards
// it was waiting for while as many others of its key were freed (its old
// session's, after a rejoin) made progress, though the count is the same;
// and a wait recorded under the member's previous session does not count
// against its new one.
func TestStepStuckIsAboutProgressAndSession(t *testing.T) {
	s := ids(4)
	now := epoch.Add(time.Hour)
	p := Policy{StuckAfter: time.Second}
	long := now.Add(-time.Minute)

	t.Run("took the ones it waited for, others freed", func(t *testing.T) {
		k := key(s, 0, 1, 2, 3)
		k.Waiting, k.WaitingSince, k.StuckSession = 2, long, "a#1"
		k.Free = []shard.ID{s[0], s[1]} // what it was waiting for
		st := State{Now: now, Shards: s, Members: live("a"), Holders: []string{"a", "a", "", ""},
			Assigned: map[string]Assignment{"a": k}}
		d := mustStep(t, st, p)
		if a, ok := d.Assign["a"]; !ok || a.Stuck || a.Waiting != 2 || !a.WaitingSince.Equal(now) ||
			!slices.Equal(a.Free, []shard.ID{s[2], s[3]}) {
			t.Fatalf("key of a %+v (written %v): want not stuck, a new wait of 2 from now, free [%s %s]", a, ok, s[2], s[3])
		}
	})
	t.Run("a wait of the previous session", func(t *testing.T) {
		k := key(s, 0, 1)
		k.Waiting, k.WaitingSince, k.StuckSession = 2, long, "a#0" // a's life before this session
		k.Free = []shard.ID{s[0], s[1]}
		st := State{Now: now, Shards: s[:2], Members: live("a"), Assigned: map[string]Assignment{"a": k}}
		d := mustStep(t, st, p)
		if a := d.Assign["a"]; a.Stuck || a.Waiting != 2 || !a.WaitingSince.Equal(now) || a.StuckSession != "a#1" {
			t.Fatalf("key of a %+v: want a new wait from now under session a#1, not a stuck mark", a)
		}
	})
	t.Run("no progress for StuckAfter under its session", func(t *testing.T) {
		k := key(s, 0, 1)
		k.Waiting, k.WaitingSince, k.StuckSession = 2, long, "a#1"
		k.Free = []shard.ID{s[0], s[1]}
		st := State{Now: now, Shards: s[:2], Members: live("a", "b"), Assigned: map[string]Assignment{"a": k}}
		d := mustStep(t, st, p)
		if a := d.Assign["a"]; !a.Stuck || a.StuckSession != "a#1" || len(a.Shards) != 0 {
			t.Fatalf("key of a %+v: want stuck under a#1 with its free shards gone", a)
		}
	})
}

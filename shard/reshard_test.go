package shard

import (
	"slices"
	"strings"
	"testing"
)

func ids(s ...string) []ID {
	out := make([]ID, len(s))
	for i, x := range s {
		out[i] = ID(x)
	}
	return out
}

func TestLineageMod(t *testing.T) {
	split := Config{Shards: 4, Name: "p", Protocol: ProtocolResharded, Layouts: []Layout{{Shards: 8, Name: "c", Lineage: LineageMod}}}
	if got := split.ParentsOf("c-005"); !slices.Equal(got, ids("p-001")) {
		t.Errorf("split 4→8: parents of c-005 = %v, want p-001 (5 mod 4)", got)
	}
	if got := split.ChildrenOf("p-001"); !slices.Equal(got, ids("c-001", "c-005")) {
		t.Errorf("split 4→8: children of p-001 = %v", got)
	}
	merge := Config{Shards: 8, Name: "p", Protocol: ProtocolResharded, Layouts: []Layout{{Shards: 4, Name: "c", Lineage: LineageMod}}}
	if got := merge.ParentsOf("c-003"); !slices.Equal(got, ids("p-003", "p-007")) {
		t.Errorf("merge 8→4: parents of c-003 = %v", got)
	}
	odd := Config{Shards: 4, Name: "p", Protocol: ProtocolResharded, Layouts: []Layout{{Shards: 6, Name: "c", Lineage: LineageMod}}}
	if got := odd.ParentsOf("c-003"); !slices.Equal(got, ids("p-001", "p-003")) {
		t.Errorf("4→6 (gcd 2): parents of c-003 = %v", got)
	}
}

// TestLineageModFollowsKeys: a key hashed h goes to parent h mod N and
// child h mod M; the child's parents must include the parent.
func TestLineageModFollowsKeys(t *testing.T) {
	for _, nm := range [][2]int{{4, 8}, {8, 4}, {4, 6}, {6, 4}, {5, 7}, {64, 128}, {128, 64}} {
		c := Config{Shards: nm[0], Name: "p", Protocol: ProtocolResharded, Layouts: []Layout{{Shards: nm[1], Name: "c", Lineage: LineageMod}}}
		ps, cs := c.segments()[0], c.segments()[1]
		for h := range 1000 {
			parent, child := ps.ID(h%nm[0]), cs.ID(h%nm[1])
			if !slices.Contains(c.ParentsOf(child), parent) || !slices.Contains(c.ChildrenOf(parent), child) {
				t.Fatalf("%d→%d: key %d is in %s then %s, but the lineage does not link them", nm[0], nm[1], h, parent, child)
			}
		}
	}
}

func TestLineageRange(t *testing.T) {
	c := Config{Shards: 2, Name: "p", Protocol: ProtocolResharded, Layouts: []Layout{{Shards: 3, Name: "c", Lineage: LineageRange}}}
	// p0 = [0, 1/2), p1 = [1/2, 1); c0 = [0, 1/3), c1 = [1/3, 2/3), c2 = [2/3, 1)
	for child, want := range map[ID][]ID{"c-000": ids("p-000"), "c-001": ids("p-000", "p-001"), "c-002": ids("p-001")} {
		if got := c.ParentsOf(child); !slices.Equal(got, want) {
			t.Errorf("parents of %s = %v, want %v", child, got, want)
		}
	}
	if got := c.ChildrenOf("p-001"); !slices.Equal(got, ids("c-001", "c-002")) {
		t.Errorf("children of p-001 = %v", got)
	}
}

func TestAcquirableDuringAReshard(t *testing.T) {
	c := Config{Shards: 2, Name: "p", Protocol: ProtocolResharded, Layouts: []Layout{{Shards: 4, Name: "c", Lineage: LineageMod,
		Opened: [][2]int{{0, 0}, {2, 2}}}}}
	if got := c.IDs(); !slices.Equal(got, ids("c-000", "c-001", "c-002", "c-003", "p-000", "p-001")) {
		t.Fatalf("IDs during the reshard = %v", got)
	}
	// c-000 and c-002 are p-000's children: both open, so p-000 is closed
	// for good; p-001's children are not.
	for id, want := range map[ID]bool{"c-000": true, "c-002": true, "c-001": false, "c-003": false, "p-000": false, "p-001": true, "x-000": false} {
		if got := c.Acquirable(id); got != want {
			t.Errorf("Acquirable(%s) = %v, want %v", id, got, want)
		}
	}
	c.Layouts[0].Opened, c.Layouts[0].Done = nil, true
	if got := c.IDs(); !slices.Equal(got, ids("c-000", "c-001", "c-002", "c-003")) {
		t.Fatalf("IDs once done = %v", got)
	}
	if !c.Retired("p-001") || c.Acquirable("p-001") || !c.Acquirable("c-003") {
		t.Errorf("once done the parents are retired and every child acquirable")
	}
	if s := c.Segments(); len(s) != 1 || s[0].Base != 2 || s[0].Name != "c" {
		t.Errorf("segments once done = %+v, want the children's alone, at base 2", s)
	}
}

func TestCancelledLayoutKeepsItsIndexes(t *testing.T) {
	c := Config{Shards: 2, Name: "p", Layouts: []Layout{
		{Shards: 4, Name: "c", Lineage: LineageMod, Cancelled: &Mark{By: "ops"}},
		{Shards: 4, Name: "d", Lineage: LineageMod}}}
	c.Protocol = StoredProtocol(c.Layouts)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s := c.Segments()
	if len(s) != 2 || s[0].Name != "p" || s[1].Name != "d" || s[1].Base != 6 {
		t.Fatalf("segments = %+v: want p (the cancelled layout's parents) then d at base 6", s)
	}
	if !c.Retired("c-000") || c.Acquirable("c-000") {
		t.Error("a cancelled layout's children are retired")
	}
	if got := c.ParentsOf("d-002"); !slices.Equal(got, ids("p-000")) {
		t.Errorf("parents of d-002 = %v: a cancelled layout is skipped", got)
	}
	if StoredProtocol(c.Layouts[:1]) != Protocol {
		t.Error("a fleet whose only reshard was cancelled is protocol 3 again")
	}
}

func TestValidateLayouts(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    []Layout
		want string
	}{
		{"same name", []Layout{{Shards: 4, Name: "p", Lineage: LineageMod}}, `"p" is another layout's`},
		{"unknown lineage", []Layout{{Shards: 4, Name: "c", Lineage: "hash"}}, `lineage "hash"`},
		{"parent without a child", []Layout{{Shards: 1, Name: "c", Lineage: LineageExplicit, Parents: [][]int{{0}}}}, "parent 1 has no child"},
		{"parent out of range", []Layout{{Shards: 2, Name: "c", Lineage: LineageExplicit, Parents: [][]int{{0}, {1, 5}}}}, "names parent 5"},
		{"two running", []Layout{{Shards: 4, Name: "c", Lineage: LineageMod}, {Shards: 2, Name: "d", Lineage: LineageMod}}, "one reshard at a time"},
		{"opened out of range", []Layout{{Shards: 4, Name: "c", Lineage: LineageMod, Opened: [][2]int{{2, 9}}}}, "opened range [2 9]"},
		{"cancelled by nobody", []Layout{{Shards: 4, Name: "c", Lineage: LineageMod, Cancelled: &Mark{}}}, "who cancelled"},
	} {
		c := Config{Shards: 2, Name: "p", Layouts: tc.l}
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want it to say %q", tc.name, err, tc.want)
		}
	}
	c := Config{Shards: 2, Name: "p", Protocol: Protocol, Layouts: []Layout{{Shards: 4, Name: "c", Lineage: LineageMod}}}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "protocol 3 with these layouts") {
		t.Errorf("a resharded config recording protocol 3 (release 0.1.0 would run it) = %v", err)
	}
}

// TestLineagesAgree: for every lineage and many counts, a child lists a
// parent exactly when that parent lists the child.
func TestLineagesAgree(t *testing.T) {
	for _, lin := range []Lineage{LineageMod, LineageRange} {
		for n := 1; n <= 12; n++ {
			for m := 1; m <= 12; m++ {
				c := Config{Shards: n, Name: "p", Protocol: ProtocolResharded, Layouts: []Layout{{Shards: m, Name: "c", Lineage: lin}}}
				ps, cs := c.segments()[0], c.segments()[1]
				for p := range n {
					for ch := range m {
						a := slices.Contains(c.ParentsOf(cs.ID(ch)), ps.ID(p))
						b := slices.Contains(c.ChildrenOf(ps.ID(p)), cs.ID(ch))
						if a != b {
							t.Fatalf("%s %d→%d: child %d lists parent %d: %v; parent lists child: %v", lin, n, m, ch, p, a, b)
						}
					}
					if len(c.ChildrenOf(ps.ID(p))) == 0 {
						t.Fatalf("%s %d→%d: parent %d has no child", lin, n, m, p)
					}
				}
			}
		}
	}
}

// TestValidateNeverPanics: layouts whose counts are out of range, before
// an explicit lineage that would be checked against them, are refused
// with an error, not a panic.
func TestValidateNeverPanics(t *testing.T) {
	for _, c := range []Config{
		{Shards: -1, Name: "s", Protocol: ProtocolResharded, Layouts: []Layout{{Shards: 1, Name: "x", Lineage: LineageExplicit, Parents: [][]int{{0}}}}},
		{Shards: 4, Name: "s", Protocol: ProtocolResharded, Layouts: []Layout{{Shards: -3, Name: "x", Lineage: LineageMod, Done: true},
			{Shards: 1, Name: "y", Lineage: LineageExplicit, Parents: [][]int{{0}}}}},
		{Shards: 4, Name: "s", Protocol: ProtocolResharded, Layouts: []Layout{{Shards: 1 << 40, Name: "x", Lineage: LineageMod, Done: true},
			{Shards: 1, Name: "y", Lineage: LineageExplicit, Parents: [][]int{{0}}}}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v validated", c)
		}
	}
	unnamed := Config{Shards: 4, Name: "s", Layouts: []Layout{{Shards: 8, Name: "x", Lineage: LineageMod}}}
	if err := unnamed.Validate(); err == nil || !strings.Contains(err.Error(), "protocol 0") {
		t.Errorf("a resharded config naming no protocol (read as 3, which 0.1.0 runs) = %v", err)
	}
}

// TestSucceedsOnlyForward: a config whose reshard went back (a child
// un-opened, a done reshard running again, a cancel after a child opened)
// does not succeed the one run; forward progress does.
func TestSucceedsOnlyForward(t *testing.T) {
	base := Config{Shards: 4, Name: "p", Protocol: ProtocolResharded}
	with := func(l Layout) Config {
		c := base
		c.Layouts = []Layout{l}
		c.Protocol = StoredProtocol(c.Layouts)
		return c
	}
	l := Layout{Shards: 8, Name: "c", Lineage: LineageMod}
	opened := l
	opened.Opened = [][2]int{{0, 0}, {4, 4}}
	more := l
	more.Opened = [][2]int{{0, 1}, {4, 5}}
	done := l
	done.Done = true
	cancelled := l
	cancelled.Cancelled = &Mark{By: "ops"}
	for _, tc := range []struct {
		from, to Layout
		want     bool
	}{
		{l, opened, true}, {opened, more, true}, {more, done, true}, {l, cancelled, true},
		{more, opened, false}, {done, more, false}, {opened, cancelled, false}, {cancelled, l, false},
	} {
		if got := with(tc.to).Succeeds(with(tc.from)); got != tc.want {
			t.Errorf("%+v after %+v: Succeeds = %v, want %v", tc.to, tc.from, got, tc.want)
		}
	}
}

package shard

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// A reshard changes a fleet's shard set while it runs: it adds a Layout to
// the config, whose shards (the children) descend from the shards of the
// layout before it (the parents). A parent is closed by its owner at an
// end its handler reaches (worker.Claim.Close); a child is opened, and may
// be acquired, only once all its parents are closed; the reshard is done
// when every child is open, and the parents' layout is retired. Until a
// child is open the reshard can be cancelled: the parents open again. See
// docs/design.md, "Resharding".

// Lineage says how a layout's shards descend from the layout before it.
type Lineage string

// The lineages.
const (
	// LineageMod suits keys placed by hash modulo the shard count (Kafka's
	// and JetStream's partitioning): a key in parent p of N shards goes to
	// child c of M with c ≡ p (mod gcd(N, M)), so those are c's parents.
	// 64 → 128: child c's parent is c mod 64; 128 → 64: child c's
	// parents are c and c+64.
	LineageMod Lineage = "mod"
	// LineageRange suits keys placed by ranges of a hash space split
	// evenly (Kinesis's): parent p covers [p/N, (p+1)/N), child c
	// [c/M, (c+1)/M), and a child's parents are the parents it overlaps.
	LineageRange Lineage = "range"
	// LineageExplicit: Layout.Parents lists each child's parents.
	LineageExplicit Lineage = "explicit"
)

// MaxLayouts bounds how many reshards a config records.
const MaxLayouts = 64

// Layout is one reshard, recorded in the fleet's config (Config.Layouts).
type Layout struct {
	// Shards is the number of the layout's shards, 1..MaxShards.
	Shards int `json:"shards"`
	// Name is the stem of its shard IDs, as Config.Name is the first
	// layout's; it differs from every other layout's.
	Name string `json:"name"`
	// Lineage says how its shards descend from the previous layout's.
	Lineage Lineage `json:"lineage"`
	// Parents, for LineageExplicit only, lists for each child the indexes
	// of its parents in the previous layout.
	Parents [][]int `json:"parents,omitempty"`
	// Opened are the children opened so far while the reshard runs, as
	// ascending inclusive index ranges ([[0,5],[9,9]]): a child is opened
	// once all its parents were seen closed, and only an opened child may
	// be acquired.
	Opened [][2]int `json:"opened,omitempty"`
	// Done says every child is open: the previous layout is retired.
	Done bool `json:"done,omitempty"`
	// Cancelled, set before any child opened, ends the reshard: its
	// children never run, the previous layout stays the fleet's.
	Cancelled *Mark `json:"cancelled,omitempty"`
	// Started says who started the reshard, when and why.
	Started Mark `json:"started"`
}

// ProtocolResharded is the protocol number a fleet's config records once
// it has a layout that was not cancelled: release 0.1.0 speaks protocol 3
// and so refuses the fleet, because it would run the first layout's shards
// again. A worker that speaks StepReshard runs fleets of either.
const ProtocolResharded = 4

// StepReshard is the protocol step of resharding: a reshard starts only
// while every live member speaks it.
const StepReshard = "reshard"

// running reports whether l is a reshard in progress.
func (l Layout) running() bool { return !l.Done && l.Cancelled == nil }

// Segment is one layout's shards in the fleet's index space: each layout
// ever recorded has its own range of indexes, after the ones before it, so
// an index never changes meaning while a config grows (see
// Config.Segments).
type Segment struct {
	// Layout is the layout's number: 0 for the config's own shard set,
	// k for Layouts[k-1].
	Layout int
	// Name and Shards are the layout's; Base is the index of its first
	// shard in the fleet's index space.
	Name   string
	Shards int
	Base   int
	width  int // Width, when the config made the segment
}

// Width is how many digits the segment's IDs pad an index to: those of
// its last index, at least three.
func (s Segment) Width() int {
	if s.width > 0 {
		return s.width
	}
	return max(len(strconv.Itoa(s.Shards-1)), 3)
}

// ID is the segment's i-th shard ID: the name, a dash and i padded to
// Width.
func (s Segment) ID(i int) ID {
	digits := strconv.Itoa(i)
	return ID(s.Name + "-" + strings.Repeat("0", max(s.Width()-len(digits), 0)) + digits)
}

// Index returns the index of id in s, exactly as ID writes it, and
// whether it is one of s's shards.
func (s Segment) Index(id ID) (int, bool) {
	rest, ok := strings.CutPrefix(string(id), s.Name+"-")
	if !ok || len(rest) != s.Width() {
		return 0, false
	}
	i := 0
	for _, r := range []byte(rest) {
		if r < '0' || r > '9' {
			return 0, false
		}
		i = i*10 + int(r-'0')
	}
	return i, i < s.Shards
}

// segments returns every layout c records as a segment, the first
// (Shards, Name) at index 0.
func (c Config) segments() []Segment {
	c = c.Normalize()
	out := make([]Segment, 1, 1+len(c.Layouts))
	out[0] = Segment{Name: c.Name, Shards: c.Shards}
	for k, l := range c.Layouts {
		last := out[len(out)-1]
		out = append(out, Segment{Layout: k + 1, Name: l.Name, Shards: l.Shards, Base: last.Base + last.Shards})
	}
	for i := range out {
		out[i].width = out[i].Width()
	}
	return out
}

// Segments are the layouts whose shards the fleet runs now, in index
// order: the current layout, and during a reshard the previous one (the
// parents) before it. Each layout ever recorded keeps its own range of
// indexes (Base), so an assignment encoded as index ranges means the same
// across a reshard.
func (c Config) Segments() []Segment {
	all := c.segments()
	cur := c.current()
	if c.Resharding() {
		return []Segment{all[c.previous(cur)], all[cur]}
	}
	return []Segment{all[cur]}
}

// current is the number of the fleet's current layout: the last one not
// cancelled (0 when none is).
func (c Config) current() int {
	for k := len(c.Layouts); k > 0; k-- {
		if c.Layouts[k-1].Cancelled == nil {
			return k
		}
	}
	return 0
}

// previous is the number of the layout before layout k: the last one
// before it not cancelled.
func (c Config) previous(k int) int {
	for j := k - 1; j > 0; j-- {
		if c.Layouts[j-1].Cancelled == nil {
			return j
		}
	}
	return 0
}

// Resharding reports whether a reshard is in progress: the last layout is
// neither done nor cancelled.
func (c Config) Resharding() bool {
	n := len(c.Layouts)
	return n > 0 && c.Layouts[n-1].running()
}

// Reshard returns the reshard in progress (its layout, a copy) and true,
// or false when none runs.
func (c Config) Reshard() (Layout, bool) {
	l, ok := c.running()
	if ok {
		l.Parents = slices.Clone(l.Parents)
		l.Opened = slices.Clone(l.Opened)
	}
	return l, ok
}

// running is the reshard in progress, sharing c's slices: for reading.
func (c Config) running() (Layout, bool) {
	if !c.Resharding() {
		return Layout{}, false
	}
	return c.Layouts[len(c.Layouts)-1], true
}

// Current is the shard count and name stem of the fleet's current layout:
// the children's during a reshard.
func (c Config) Current() (shards int, name string) {
	s := c.segments()[c.current()]
	return s.Shards, s.Name
}

// locate returns the layout and index of id among every layout c records.
func (c Config) locate(id ID) (layout, index int, ok bool) {
	for k, s := range c.segments() {
		if i, ok := s.Index(id); ok {
			return k, i, true
		}
	}
	return 0, 0, false
}

// Locate returns the layout number (0: the config's own shard set) and
// the index within it of shard id, for any layout the config records, and
// false for an ID of none. A handler uses it to map its shard to its
// stream's partition (index of count, Current's or the parents').
func (c Config) Locate(id ID) (layout, index int, ok bool) { return c.locate(id) }

// Retired reports whether id is a shard of a layout the fleet no longer
// runs: a parent after its reshard was done, or a child of a cancelled
// reshard. Its key may stay under the prefix; it is never acquired again.
func (c Config) Retired(id ID) bool {
	k, _, ok := c.locate(id)
	if !ok {
		return false
	}
	return !slices.ContainsFunc(c.Segments(), func(s Segment) bool { return s.Layout == k })
}

// Acquirable reports whether id may be locked under c: a shard of the
// current layout when no reshard runs; during a reshard, a child that is
// opened, or a parent none of whose children is.
func (c Config) Acquirable(id ID) bool {
	k, i, ok := c.locate(id)
	if !ok {
		return false
	}
	cur := c.current()
	l, running := c.running()
	switch {
	case k == cur && !running:
		return true
	case k == cur:
		return opened(l.Opened, i)
	case !running || k != c.previous(cur):
		return false // retired
	}
	for _, ch := range c.children(i) {
		if opened(l.Opened, ch) {
			return false
		}
	}
	return true
}

// opened reports whether index i is in the ranges.
func opened(ranges [][2]int, i int) bool {
	for _, r := range ranges {
		if r[0] <= i && i <= r[1] {
			return true
		}
	}
	return false
}

// ParentsOf returns the parents of shard id, a child of a reshard (of
// any layout after the first, done or not), in index order: the shards of
// the layout before its own that its keys came from. Nil for a shard of
// the first layout, or of none.
func (c Config) ParentsOf(id ID) []ID {
	k, i, ok := c.locate(id)
	if !ok || k == 0 {
		return nil
	}
	p := c.segments()[c.previous(k)]
	var out []ID
	for _, j := range parentsIn(c.Layouts[k-1], p.Shards, i) {
		out = append(out, p.ID(j))
	}
	return out
}

// ChildrenOf returns the children of parent id in the reshard in
// progress, in index order; nil when id is not one of its parents.
func (c Config) ChildrenOf(id ID) []ID {
	_, running := c.running()
	k, i, ok := c.locate(id)
	if !running || !ok || k != c.previous(c.current()) {
		return nil
	}
	s := c.segments()[c.current()]
	var out []ID
	for _, j := range c.children(i) {
		out = append(out, s.ID(j))
	}
	return out
}

// parentsIn lists the parents' indexes of child i of layout l, whose
// previous layout has n shards.
func parentsIn(l Layout, n, i int) []int {
	m := l.Shards
	var out []int
	switch l.Lineage {
	case LineageExplicit:
		if i < len(l.Parents) {
			out = slices.Clone(l.Parents[i])
			slices.Sort(out)
		}
	case LineageRange:
		for p := i * n / m; p < n; p++ {
			if p*m >= (i+1)*n {
				break
			}
			if i*n < (p+1)*m {
				out = append(out, p)
			}
		}
	default: // LineageMod
		g := gcd(n, m)
		for p := i % g; p < n; p += g {
			out = append(out, p)
		}
	}
	return out
}

// children lists the children's indexes of parent p in the reshard in
// progress.
func (c Config) children(p int) []int {
	l, running := c.running()
	if !running {
		return nil
	}
	n, m := c.segments()[c.previous(c.current())].Shards, l.Shards
	var out []int
	switch l.Lineage {
	case LineageExplicit:
		for ch := range m {
			if slices.Contains(l.Parents[ch], p) {
				out = append(out, ch)
			}
		}
	case LineageRange:
		// Children overlapping [p/n, (p+1)/n): from ⌊p·m/n⌋ to ⌈(p+1)·m/n⌉−1.
		for ch := p * m / n; ch < m && ch*n < (p+1)*m; ch++ {
			out = append(out, ch)
		}
	default:
		g := gcd(n, m)
		for ch := p % g; ch < m; ch += g {
			out = append(out, ch)
		}
	}
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// validateLayouts lists what is wrong with c's layouts.
func (c Config) validateLayouts() []string {
	var problems []string
	if len(c.Layouts) > MaxLayouts {
		return append(problems, fmt.Sprintf("%d layouts recorded, more than %d", len(c.Layouts), MaxLayouts))
	}
	// A config that names no protocol reads as protocol 3, which release
	// 0.1.0 would run: a resharded one must name 4.
	if p := StoredProtocol(c.Layouts); len(c.Layouts) > 0 && c.Protocol != p && (c.Protocol != 0 || p != Protocol) {
		problems = append(problems, fmt.Sprintf("protocol %d with these layouts, which record protocol %d", c.Protocol, p))
	}
	if c.Shards < 1 || c.Shards > MaxShards {
		return problems // the layouts' lineages cannot be checked against it (Validate says why)
	}
	names := map[string]bool{c.Normalize().Name: true}
	for k, l := range c.Layouts {
		at := fmt.Sprintf("layout %d", k+1)
		if l.Shards < 1 || l.Shards > MaxShards {
			// Later lineages would be checked against it: stop here.
			return append(problems, fmt.Sprintf("%s: shard count %d is out of range: want 1..%d", at, l.Shards, MaxShards))
		}
		if l.Name == "" || strings.ContainsAny(l.Name, " \t\n") || strings.HasPrefix(l.Name, "/") || strings.HasSuffix(l.Name, "/") {
			problems = append(problems, fmt.Sprintf("%s: shard name %q must be set, without spaces, and not start or end with '/'", at, l.Name))
		}
		if names[l.Name] {
			problems = append(problems, fmt.Sprintf("%s: shard name %q is another layout's: each layout names its shards apart", at, l.Name))
		}
		names[l.Name] = true
		if l.Done && l.Cancelled != nil {
			problems = append(problems, fmt.Sprintf("%s is both done and cancelled", at))
		}
		if l.running() && k != len(c.Layouts)-1 {
			problems = append(problems, fmt.Sprintf("%s is still running but is not the last: one reshard at a time", at))
		}
		if (l.Done || l.Cancelled != nil) && len(l.Opened) > 0 {
			problems = append(problems, fmt.Sprintf("%s lists opened children but is no longer running", at))
		}
		if l.Cancelled != nil && l.Cancelled.By == "" {
			problems = append(problems, fmt.Sprintf("%s: a cancellation must say who cancelled it", at))
		}
		for i, r := range l.Opened {
			if r[0] < 0 || r[1] < r[0] || r[1] >= l.Shards || i > 0 && r[0] <= l.Opened[i-1][1] {
				problems = append(problems, fmt.Sprintf("%s: opened range %v is not ascending inside 0..%d", at, r, l.Shards-1))
			}
		}
		n := c.segments()[c.previous(k+1)].Shards
		problems = append(problems, l.validateLineage(at, n)...)
	}
	return problems
}

// validateLineage lists what is wrong with l's lineage from a layout of
// n shards.
func (l Layout) validateLineage(at string, n int) []string {
	switch l.Lineage {
	case LineageMod, LineageRange:
		if len(l.Parents) > 0 {
			return []string{fmt.Sprintf("%s: parents are listed only for lineage %q", at, LineageExplicit)}
		}
		return nil
	case LineageExplicit:
	default:
		return []string{fmt.Sprintf("%s: lineage %q is none of %q, %q, %q", at, l.Lineage, LineageMod, LineageRange, LineageExplicit)}
	}
	if len(l.Parents) != l.Shards {
		return []string{fmt.Sprintf("%s: %d children but parents listed for %d", at, l.Shards, len(l.Parents))}
	}
	var problems []string
	hasChild := make([]bool, n)
	for ch, ps := range l.Parents {
		if len(ps) == 0 {
			problems = append(problems, fmt.Sprintf("%s: child %d has no parent", at, ch))
		}
		for _, p := range ps {
			if p < 0 || p >= n {
				problems = append(problems, fmt.Sprintf("%s: child %d names parent %d, outside 0..%d", at, ch, p, n-1))
				continue
			}
			hasChild[p] = true
		}
	}
	for p, ok := range hasChild {
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: parent %d has no child: its keys would have nowhere to go", at, p))
		}
	}
	return problems
}

// StoredProtocol is the protocol number a config with layouts ls records:
// ProtocolResharded once one was not cancelled, else Protocol.
func StoredProtocol(ls []Layout) int {
	for _, l := range ls {
		if l.Cancelled == nil {
			return ProtocolResharded
		}
	}
	return Protocol
}

// speaksStored reports whether a worker of protocol mine may run a fleet
// whose config is stored: the same protocol, or a resharded fleet (one
// with a layout not cancelled, recording ProtocolResharded) for a worker
// of this build's protocol.
func speaksStored(stored Config, mine int) bool {
	return stored.Protocol == mine ||
		stored.Protocol == ProtocolResharded && mine == Protocol && StoredProtocol(stored.Layouts) == ProtocolResharded
}

// Succeeds reports whether c is prev as reshards rewrote it: the same
// first shard set, and every layout prev records still recorded with the
// same shards, name and lineage, its progress only further (children
// opened stay open, done and cancelled stay so, and a reshard with a child
// open is not cancelled), perhaps followed by more. A coordinator that
// runs prev adopts such a c when it reads it (see Fleet.SetLayouts).
func (c Config) Succeeds(prev Config) bool {
	if !c.Equal(prev) || len(c.Layouts) < len(prev.Layouts) || c.Normalize().Protocol != StoredProtocol(c.Layouts) {
		return false
	}
	for k, p := range prev.Layouts {
		l := c.Layouts[k]
		if l.Shards != p.Shards || l.Name != p.Name || l.Lineage != p.Lineage || !slices.EqualFunc(l.Parents, p.Parents, slices.Equal) {
			return false
		}
		// Progress only goes forward: a done or cancelled reshard stays so,
		// and an open child stays open.
		switch {
		case p.Done && !l.Done, p.Cancelled != nil && l.Cancelled == nil:
			return false
		case !l.Done && l.Cancelled == nil:
			for _, r := range p.Opened {
				for i := r[0]; i <= r[1]; i++ {
					if !opened(l.Opened, i) {
						return false
					}
				}
			}
		case l.Cancelled != nil && p.Cancelled == nil && (p.Done || len(p.Opened) > 0):
			return false // a reshard with a child open is never cancelled
		}
	}
	return true
}

// NextLayouts is stored with its layouts rewritten from from to to, as
// Fleet.SetLayouts writes it (its protocol StoredProtocol(to)). It fails
// with ErrConfigChanged when stored's layouts are not from (another
// rewrite came first: read again and decide again), and with
// ErrInvalidArgument when the result is not a valid config or does not
// succeed stored (Config.Succeeds: a layout's shards, name or lineage
// changed, or one was dropped).
func NextLayouts(stored Config, from, to []Layout) (Config, error) {
	if !reflect.DeepEqual(normalLayouts(stored.Layouts), normalLayouts(from)) {
		return stored, fmt.Errorf("%w: its layouts are not the ones the change was decided from: read it again", ErrConfigChanged)
	}
	next := stored
	next.Layouts = slices.Clone(to)
	next.Protocol = StoredProtocol(to)
	if err := next.Validate(); err != nil {
		return stored, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	if !next.Succeeds(stored) {
		return stored, fmt.Errorf("%w: the new layouts do not follow the stored ones: a recorded layout keeps its shards, name and lineage, and stays recorded", ErrInvalidArgument)
	}
	return next, nil
}

// normalLayouts is ls with nil for empty, for comparing.
func normalLayouts(ls []Layout) []Layout {
	if len(ls) == 0 {
		return nil
	}
	return ls
}

package sim

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// lineage checks what a reshard promises (shard/reshard.go,
// worker/reshard.go), as the run goes:
//
//  1. A child's handler starts only after each of its parents closed in
//     this reshard: a Close of the parent returned nil (the handler
//     records it before returning, so before its lock can be released
//     as closed, so before any child can open).
//  2. No parent's commit is accepted after one of its children fenced it
//     or a child's handler started: the child's fence (the worker's
//     parents step, with the child's token) makes the store refuse them.
//     Commits are recorded in the store's own order (lineageStore holds
//     a lock per shard around each call), so this is exact.
//  3. A child's Claim.Parents hold, for each parent, its last accepted
//     commit (offset and token), and that commit is the parent's latest
//     successful Close: nothing was committed after its end.
//  4. No handler of a new claim of a parent starts after the parent's
//     lock was released as closed (shard.ReasonClosed), unless that
//     reshard was cancelled (a cancel reopens the closed parents), as the
//     stored config says at that moment.
//
// A Close that returned nil does not make a parent closed: the worker may
// lose the claim, or stop, before it releases the lock as closed, and
// then the parent's next owner is asked to close it again. So (4) reads
// the releases as closed at the coordinator (closeWatch), and (1) wants
// the latest Close of each parent to be in this reshard.
type lineage struct {
	c *checker
	// stored reads the fleet's config as stored now; granted reports
	// whether the coordinator granted claim to an owner of its shard
	// (a fence of a parent with a token not its own is a child's).
	stored  func() shard.Config
	granted func(shard.Claim) bool
	// reopens counts the closed parents run again before any of their
	// children opened (reopened).
	reopens atomic.Int64
	// unreleased counts the releases as closed that failed
	// (releaseFailed).
	unreleased atomic.Int64

	mu       sync.Mutex
	cfg      shard.Config            // the layouts as last read; a layout's shape never changes
	kids     map[shard.ID][]shard.ID // the children of each shard, in every layout cfg records
	commits  map[shard.ID]commitRec
	closes   map[shard.ID]closeRec // each parent's latest successful Close
	released map[shard.ID]closeRec // each parent's latest release as closed
	fenced   map[shard.ID]childRec // the first fence of each parent by a child
	started  map[shard.ID]childRec // the first handler start of a child of each parent
	locks    map[shard.ID]*sync.Mutex
	// first is when each claim's handler first started, told the claims
	// whose handler saw Claim.Closing (for untoldParents).
	first map[shard.Claim]time.Duration
	told  map[shard.Claim]bool
}

type commitRec struct {
	token  shard.Token
	offset int64
	at     time.Duration
}

// closeRec is a parent's close: by the claim of token, at offset, in the
// reshard of layout number layout (Config.Layouts[layout-1]).
type closeRec struct {
	token  shard.Token
	offset int64
	layout int
	at     time.Duration
}

type childRec struct {
	child shard.ID
	token shard.Token
	at    time.Duration
}

func newLineage(c *checker, stored func() shard.Config, granted func(shard.Claim) bool) *lineage {
	return &lineage{c: c, stored: stored, granted: granted,
		commits: map[shard.ID]commitRec{}, closes: map[shard.ID]closeRec{}, released: map[shard.ID]closeRec{},
		fenced: map[shard.ID]childRec{}, started: map[shard.ID]childRec{}, locks: map[shard.ID]*sync.Mutex{},
		first: map[shard.Claim]time.Duration{}, told: map[shard.Claim]bool{}}
}

// setConfig records a config just stored (a reshard started or
// cancelled).
func (l *lineage) setConfig(cfg shard.Config) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(cfg.Layouts) < len(l.cfg.Layouts) {
		return
	}
	if l.kids == nil || len(cfg.Layouts) > len(l.cfg.Layouts) {
		l.kids = children(cfg)
	}
	l.cfg = cfg
}

// config returns a config that knows id's layout, reading the stored one
// when the last one read does not.
func (l *lineage) config(id shard.ID) shard.Config {
	l.mu.Lock()
	cfg := l.cfg
	l.mu.Unlock()
	if _, _, ok := cfg.Locate(id); ok {
		return cfg
	}
	cfg = l.stored()
	l.setConfig(cfg)
	return cfg
}

// reshardNow is the layout number of the reshard a close happens in: the
// last layout stored (a reshard cancelled since still counts as its own).
func (l *lineage) reshardNow() int { return len(l.stored().Layouts) }

// children maps each shard of cfg to its children, in every layout cfg
// records (a cancelled one's too: they never run).
func children(cfg shard.Config) map[shard.ID][]shard.ID {
	out := map[shard.ID][]shard.ID{}
	for _, s := range allSegments(cfg)[1:] {
		for i := range s.Shards {
			id := s.ID(i)
			for _, p := range cfg.ParentsOf(id) {
				out[p] = append(out[p], id)
			}
		}
	}
	return out
}

// allSegments is every layout cfg records, cancelled or not, as a
// segment (Segment.Base left out: the checks name shards by ID).
func allSegments(cfg shard.Config) []shard.Segment {
	n := cfg.Normalize()
	out := []shard.Segment{{Name: n.Name, Shards: n.Shards}}
	for k, lay := range cfg.Layouts {
		out = append(out, shard.Segment{Layout: k + 1, Name: lay.Name, Shards: lay.Shards})
	}
	return out
}

// shardLock is the lock lineageStore holds around each call on id.
func (l *lineage) shardLock(id shard.ID) *sync.Mutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.locks[id]
	if m == nil {
		m = &sync.Mutex{}
		l.locks[id] = m
	}
	return m
}

// fence records a fence of s with token that the store accepted, or
// refused as stale (a sibling fenced higher first): if token is not a
// claim of s, a child fenced its parent s. Called with s's lock held.
func (l *lineage) fence(s shard.ID, token shard.Token) {
	if l.granted(shard.Claim{Shard: s, Token: token}) {
		return
	}
	find := func() shard.ID {
		l.mu.Lock()
		kids := l.kids[s]
		l.mu.Unlock()
		for _, c := range kids {
			if l.granted(shard.Claim{Shard: c, Token: token}) {
				return c
			}
		}
		return ""
	}
	child := find()
	if child == "" { // a reshard started since the config was last read?
		l.setConfig(l.stored())
		child = find()
	}
	if child == "" {
		return // a grant the recorder did not see: the other checks judge it
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.fenced[s]; !ok {
		l.fenced[s] = childRec{child: child, token: token, at: l.c.elapsed()}
	}
}

// commit records a commit of s the store accepted and checks (2).
// Called with s's lock held.
func (l *lineage) commit(s shard.ID, token shard.Token, offset int64) {
	at := l.c.elapsed()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.commits[s] = commitRec{token: token, offset: offset, at: at}
	if f, ok := l.fenced[s]; ok {
		l.c.violate("parent %s: commit @%d of offset %d accepted at t=%v, after its child %s fenced it with token %d at t=%v",
			s, token, offset, at, f.child, f.token, f.at)
	}
	if st, ok := l.started[s]; ok {
		l.c.violate("parent %s: commit @%d of offset %d accepted at t=%v, after the handler of its child %s@%d started at t=%v",
			s, token, offset, at, st.child, st.token, st.at)
	}
}

// closed records that a handler of claim c closed its shard at offset
// (Claim.Close returned nil).
func (l *lineage) closed(c shard.Claim, offset int64) {
	k := l.reshardNow()
	at := l.c.elapsed()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closes[c.Shard] = closeRec{token: c.Token, offset: offset, layout: k, at: at}
}

// releasedClosed records that the locks of claims were released as
// closed (shard.ReasonClosed).
func (l *lineage) releasedClosed(claims []shard.Claim) {
	if len(claims) == 0 {
		return
	}
	k := l.reshardNow()
	at := l.c.elapsed()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range claims {
		l.released[c.Shard] = closeRec{token: c.Token, layout: k, at: at}
	}
}

// start checks a handler's start for claim c, given its Claim.Start and
// Claim.Parents: (1) and (3) for a child, (4) for a parent. A child with
// a checkpoint of its own (it committed under an earlier claim) is given
// no parents: its own checkpoint wins, and its parents were checked at
// its first start. It reports whether c is a child.
func (l *lineage) start(worker string, c shard.Claim, from offsets.Checkpoint, parents map[shard.ID]offsets.Checkpoint) bool {
	at := l.c.elapsed()
	cfg := l.config(c.Shard)
	ps := cfg.ParentsOf(c.Shard)
	k, _, _ := cfg.Locate(c.Shard)
	l.mu.Lock()
	if _, ok := l.first[c]; !ok {
		l.first[c] = at
	}
	rel, wasClosed := l.released[c.Shard]
	if len(ps) > 0 {
		own := from.Token != 0
		if !own && len(parents) != len(ps) {
			l.c.violate("child %s: %s's handler for %v was given the checkpoints of %d parents, it has %d (%v)", c.Shard, worker, c, len(parents), len(ps), ps)
		}
		for _, p := range ps {
			l.checkParent(worker, c, p, k, parents, own, at)
			if _, ok := l.started[p]; !ok {
				l.started[p] = childRec{child: c.Shard, token: c.Token, at: at}
			}
		}
	}
	l.mu.Unlock()
	if wasClosed && c.Token > rel.token {
		if now := l.stored(); rel.layout > len(now.Layouts) || now.Layouts[rel.layout-1].Cancelled == nil {
			l.reopened(worker, c, rel, at)
		}
	}
	return len(ps) > 0
}

// reopened judges the start at at of worker's handler for claim c, a
// new claim of a parent released as closed (rel) in a reshard not
// cancelled. Once a child of it fenced it or started, the coordinator
// must refuse the parent's lock (shard.Config.Acquirable): a violation.
// Before that the coordinator grants it, and nothing but the worker's
// memory of the shards it closed (worker.closedShards) keeps a worker
// from taking it back: a restarted worker whose assignment key was
// written before the close, or one served a stale key that lists the
// parent without asking to close it, takes it. docs/design.md allows
// this ("Between its close and its first child's opening, a stale
// assignment ... could get it locked: its new owner is told to close it
// again"), so it is counted (reopens).
func (l *lineage) reopened(worker string, c shard.Claim, rel closeRec, at time.Duration) {
	l.mu.Lock()
	f, fenced := l.fenced[c.Shard]
	st, started := l.started[c.Shard]
	l.mu.Unlock()
	what := fmt.Sprintf("closed parent %s runs again: %s's handler for %v started at t=%v; it was released as closed at t=%v (claim @%d) in the reshard of layout %d, which was not cancelled",
		c.Shard, worker, c, at, rel.at, rel.token, rel.layout)
	switch {
	case fenced:
		l.c.violate("%s, after its child %s fenced it at t=%v", what, f.child, f.at)
	case started:
		l.c.violate("%s, after the handler of its child %s started at t=%v", what, st.child, st.at)
	default:
		l.reopens.Add(1)
		if l.c.trace != nil {
			l.c.trace(fmt.Sprintf("REOPENED t=%v: %s, before any child of it opened (counted: docs/design.md allows it)", at, what))
		}
	}
}

// checkParent checks (1) and (3) for parent p of child claim c, of
// layout k; what the child was given of p unless it starts from a
// checkpoint of its own. l.mu held.
func (l *lineage) checkParent(worker string, c shard.Claim, p shard.ID, k int, parents map[shard.ID]offsets.Checkpoint, own bool, at time.Duration) {
	cl, ok := l.closes[p]
	switch {
	case !ok:
		l.c.violate("child %s: %s's handler for %v started at t=%v before its parent %s closed: no Close of it succeeded",
			c.Shard, worker, c, at, p)
		return
	case cl.layout != k:
		l.c.violate("child %s: %s's handler for %v started at t=%v before its parent %s closed in this reshard (layout %d): its latest Close, @%d at t=%v, was in the reshard of layout %d",
			c.Shard, worker, c, at, p, k, cl.token, cl.at, cl.layout)
		return
	}
	last := l.commits[p]
	if last.token != cl.token || last.offset != cl.offset {
		l.c.violate("child %s started at t=%v: its parent %s's last accepted commit, @%d offset %d at t=%v, is not its close, @%d offset %d at t=%v",
			c.Shard, at, p, last.token, last.offset, last.at, cl.token, cl.offset, cl.at)
	}
	got, ok := parents[p]
	switch {
	case own:
	case !ok:
		l.c.violate("child %s: %s's handler for %v was not given its parent %s's checkpoint", c.Shard, worker, c, p)
	case got.Offset != last.offset || got.Token != last.token:
		l.c.violate("child %s: %s's handler for %v was given its parent %s's checkpoint as offset %d @%d, but its last accepted commit is offset %d @%d",
			c.Shard, worker, c, p, got.Offset, got.Token, last.offset, last.token)
	}
}

// releaseFailed records that worker failed to release ids as closed
// (err): a partition, or its session ending at that moment. The worker
// must take the parent again and close it again (before c61f9e6 it kept
// it among the shards it closed for good, and the reshard stalled).
// Counted.
func (l *lineage) releaseFailed(worker string, ids []shard.ID, err error) {
	l.unreleased.Add(int64(len(ids)))
	if l.c.trace != nil {
		l.c.trace(fmt.Sprintf("UNRELEASED t=%v: %s closed %v but could not release them as closed: %v (counted)", l.c.elapsed(), worker, ids, err))
	}
}

// asked records that the handler of claim c saw Claim.Closing.
func (l *lineage) asked(c shard.Claim) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.told[c] = true
}

// untold reports whether claim c's handler has run since at or before
// t and was never told to close its shard.
func (l *lineage) untold(c shard.Claim, t time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.first[c]
	return ok && at <= t && !l.told[c]
}

package etcd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/shardlease/shardlease/internal/backoff"
	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// mirror is the fleet's keys as one watch of the prefix keeps them: read
// whole once, then changed by the watch's events alone (etcd sends the
// changes, not the prefix again), read whole again when etcd compacted
// the history the watch needed or the watch failed. Keys under
// P/offsets/ and P/history are dropped as they arrive: Fleet.Watch shows
// neither.
//
// Its index, rev, is the revision of the last change to what a snapshot
// shows. A new session's key is not one (no key names it yet), and a
// session's end is one only while a key names it: so, as on Consul,
// calls that write nothing a snapshot shows wake no watcher.
type mirror struct {
	c    *Coordinator
	done chan struct{} // closed when run returns (the coordinator closed)
	// stream tags the mirror's watch with gRPC metadata of its own, so
	// that it has a stream of its own: etcd answers a progress request
	// only when every watch of the stream has caught up, and the key
	// watches of follow start at future revisions all the time.
	stream metadata.MD

	mu      sync.Mutex
	entries map[string]entry
	// named counts, for each session, the keys whose envelope names it.
	named map[shard.SessionID]int
	// live are the sessions whose key the mirror holds.
	live map[shard.SessionID]bool
	// deaths is the revision at which each ended session's key was
	// deleted, or, for one found ended by a read, that read's revision:
	// a lock it held was freed there.
	deaths map[shard.SessionID]int64
	// order is the keys pairs lists (every key but the session keys),
	// sorted as of the last pairs; added are those stored since, and
	// reorder says a key was removed since (order is built again).
	order    []string
	added    []string
	reorder  bool
	rev      int64 // last revision that changed the view; 0: never read
	progress int64 // every change up to this revision is applied
	err      error // the last read's failure, nil once read
	changed  chan struct{}
	// stop ends the current watch, so that run reads the prefix whole
	// again (etcd went back: restored from a snapshot).
	stop context.CancelFunc
}

// entry is one key and, for a key a session may hold, its envelope.
type entry struct {
	kv   *mvccpb.KeyValue
	kind keyKind
	env  envelope
	ok   bool // env was read (a held kind)
}

// keyKind is what a key of the fleet is, decided once when it is stored
// (pairs reads every key on every snapshot).
type keyKind uint8

const (
	plainKey   keyKind = iota // config, freeze, assignments, …
	heldKey                   // a member or report key: an envelope
	lockKey                   // a shard's or a role's lock: an envelope
	sessionKey                // P/sessions/<id>
)

// kindOf is the kind of the fleet's key rel (below P/).
func kindOf(rel string) keyKind {
	switch {
	case strings.HasPrefix(rel, "sessions/"):
		return sessionKey
	case isLockKey(rel):
		return lockKey
	case isHeldKind(rel):
		return heldKey
	}
	return plainKey
}

// startMirror returns the coordinator's mirror, starting it on first use.
func (c *Coordinator) startMirror() *mirror {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mirror == nil {
		c.mirror = &mirror{c: c, done: make(chan struct{}), changed: make(chan struct{}),
			stream: metadata.Pairs("shardlease-mirror", fmt.Sprintf("%p", c))}
		go c.mirror.run()
	}
	return c.mirror
}

// run reads the prefix and follows it until the coordinator closes.
func (m *mirror) run() {
	defer close(m.done)
	ctx := m.c.ctx
	retry := backoff.Backoff{Base: 100 * time.Millisecond, Max: 5 * time.Second, J: backoff.NewJitter(uint64(time.Now().UnixNano()))}
	for ctx.Err() == nil {
		rev, err := m.load(ctx)
		if err != nil {
			m.fail(err)
			backoff.Sleep(ctx.Done(), retry.Next())
			continue
		}
		started := time.Now()
		m.follow(ctx, rev)
		if time.Since(started) > time.Second { // a watch that fails at once keeps backing off
			retry.Reset()
		} else {
			backoff.Sleep(ctx.Done(), retry.Next())
		}
	}
}

// load reads the fleet's keys whole, in one transaction of two ranges that
// leave P/offsets/ out, and replaces the mirror with them.
func (m *mirror) load(ctx context.Context) (int64, error) {
	c := m.c
	octx, cancel := c.opCtx(ctx)
	defer cancel()
	dir := c.keys.Dir()
	offsets := dir + "offsets/"
	resp, err := c.cli.Txn(octx).Then(
		clientv3.OpGet(dir, clientv3.WithRange(offsets)),
		clientv3.OpGet(clientv3.GetPrefixRangeEnd(offsets), clientv3.WithRange(clientv3.GetPrefixRangeEnd(dir))),
	).Commit()
	if err != nil {
		return 0, c.fail(octx, "watch (read the fleet)", err)
	}
	rev := resp.Header.Revision
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = make(map[string]entry)
	m.named = make(map[shard.SessionID]int)
	m.live = make(map[shard.SessionID]bool)
	m.deaths = make(map[shard.SessionID]int64)
	m.order, m.added, m.reorder = nil, nil, true
	for _, r := range resp.Responses {
		for _, kv := range r.GetResponseRange().Kvs {
			if !m.dropped(string(kv.Key)) {
				m.put(kv)
			}
		}
	}
	for s := range m.named {
		if !m.live[s] {
			m.deaths[s] = rev
		}
	}
	// A reload wakes every watcher, to read what it found; one at a lower
	// revision (etcd rebuilt or restored) makes shard.NextIndex restart
	// them from 0.
	m.rev = rev
	m.progress, m.err = rev, nil
	m.notify()
	return rev, nil
}

// watchCtx is ctx on the mirror's own stream, requiring a leader: a member
// cut off from the others ends the watch (and the mirror reads again)
// instead of staying silent.
func (m *mirror) watchCtx(ctx context.Context) context.Context {
	return clientv3.WithRequireLeader(metadata.NewOutgoingContext(ctx, m.stream))
}

// follow applies the watch's events from rev+1 until the watch ends.
func (m *mirror) follow(ctx context.Context, rev int64) {
	wctx, cancel := context.WithCancel(m.watchCtx(ctx))
	defer cancel()
	m.mu.Lock()
	m.stop = cancel
	m.mu.Unlock()
	for resp := range m.c.cli.Watch(wctx, m.c.keys.Dir(), clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithProgressNotify()) {
		if resp.CompactRevision != 0 || resp.Canceled || resp.Err() != nil {
			return // read whole again
		}
		// A response's header may be ahead of its events (a watch
		// catching up gets them a thousand revisions at a time): only a
		// progress notice says every change up to its revision was sent.
		progress := resp.Header.Revision
		if n := len(resp.Events); n > 0 {
			progress = resp.Events[n-1].Kv.ModRevision
		}
		m.apply(resp.Events, progress)
	}
}

// went reports that etcd answered at revision rev: below what the mirror
// applied, etcd went back (restored from a snapshot), and the mirror
// reads the prefix whole again.
func (m *mirror) went(rev int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rev < m.progress && m.stop != nil {
		m.stop()
		m.progress = 0 // until read again
	}
}

// requestProgress asks etcd for a progress notice on the mirror's stream,
// bounded by ctx.
func (m *mirror) requestProgress(ctx context.Context) {
	_ = m.c.cli.RequestProgress(m.watchCtx(ctx))
}

// dropped reports whether key is one the mirror leaves out: P/offsets/
// (the offsets store's) and P/history (read by History.Read alone).
func (m *mirror) dropped(key string) bool {
	rel := strings.TrimPrefix(key, m.c.keys.Dir())
	return strings.HasPrefix(rel, "offsets/") || rel == "history"
}

// apply changes the mirror by events, all applied up to revision.
func (m *mirror) apply(events []*clientv3.Event, revision int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	for _, ev := range events {
		relevant := false
		key := string(ev.Kv.Key)
		if m.dropped(key) {
			continue
		}
		rel := strings.TrimPrefix(key, m.c.keys.Dir())
		session, isSession := strings.CutPrefix(rel, "sessions/")
		if ev.Type == mvccpb.PUT {
			m.put(ev.Kv)
			relevant = !isSession
		} else {
			m.remove(key)
			relevant = true
			if isSession {
				s := shard.SessionID(session)
				if relevant = m.named[s] > 0; relevant {
					m.deaths[s] = ev.Kv.ModRevision
				}
			}
		}
		if relevant {
			m.rev, changed = max(m.rev, ev.Kv.ModRevision), true
		}
	}
	m.progress = max(m.progress, revision)
	if changed {
		m.notify()
	}
}

// put stores kv, counting the session its envelope names. Callers hold mu.
func (m *mirror) put(kv *mvccpb.KeyValue) {
	key := string(kv.Key)
	rel := strings.TrimPrefix(key, m.c.keys.Dir())
	e := entry{kv: kv, kind: kindOf(rel)}
	if old, ok := m.entries[key]; ok {
		m.forget(key, old)
	} else if e.kind != sessionKey {
		m.added = append(m.added, key)
	}
	switch e.kind {
	case sessionKey:
		m.live[shard.SessionID(strings.TrimPrefix(rel, "sessions/"))] = true
	case heldKey, lockKey:
		e.env, e.ok = unwrap(kv.Value)
		if e.ok && e.env.Session != "" {
			m.named[e.env.Session]++
		}
	}
	m.entries[key] = e
}

// remove drops key. Callers hold mu.
func (m *mirror) remove(key string) {
	old, ok := m.entries[key]
	if !ok {
		return
	}
	delete(m.entries, key)
	m.forget(key, old)
	if old.kind != sessionKey {
		m.reorder = true
	}
}

// forget undoes what storing old at key counted. Callers hold mu.
func (m *mirror) forget(key string, old entry) {
	if old.kind == sessionKey {
		delete(m.live, shard.SessionID(strings.TrimPrefix(key, m.c.keys.Dir()+"sessions/")))
	}
	if s := old.env.Session; old.ok && s != "" {
		if m.named[s]--; m.named[s] <= 0 {
			delete(m.named, s)
			delete(m.deaths, s)
		}
	}
}

// fail records a failed read; watchers waiting for the first read get it.
func (m *mirror) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err = err
	m.notify()
}

// notify wakes the watchers. Callers hold mu.
func (m *mirror) notify() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// state is what a watcher waits on: the mirror's index and progress, the
// last failure, and a channel closed at the next change.
func (m *mirror) state() (rev, progress int64, err error, changed <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rev, m.progress, m.err, m.changed
}

// pairs is the mirror as the fleet's keys, sorted by key, at its index:
// each held key with its holder while the holder's key exists, and a lock
// whose holder ended at the revision of that end (as on Consul, where the
// end rewrites the key), so its token is above its holder's.
//
// unreadable lists the held keys whose envelope cannot be read.
func (m *mirror) pairs() (pairs []*fleetkeys.Pair, index uint64, unreadable []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sortKeys()
	slab := make([]fleetkeys.Pair, len(m.order)) // one allocation, not one per key
	pairs = make([]*fleetkeys.Pair, len(m.order))
	for i, key := range m.order {
		e := m.entries[key]
		p := &slab[i]
		*p = fleetkeys.Pair{Key: key, Value: e.kv.Value, Index: uint64(e.kv.ModRevision)}
		pairs[i] = p
		if e.kind == heldKey || e.kind == lockKey {
			switch {
			case !e.ok && e.kind == lockKey:
				p.Session = unreadableHolder
				unreadable = append(unreadable, key)
			case !e.ok:
				unreadable = append(unreadable, key)
			case e.env.Session == "":
				p.Value = e.env.Value
			default:
				p.Value = e.env.Value
				if m.live[e.env.Session] {
					p.Session = e.env.Session
				} else if death := m.deaths[e.env.Session]; e.kind == lockKey && death > e.kv.ModRevision {
					p.Index = uint64(death)
				}
			}
		}
	}
	return pairs, uint64(m.rev), unreadable
}

// sortKeys brings order up to date: the keys stored since are sorted and
// merged in (a listing sorts only what is new: at 100,000 keys, sorting
// them all on every snapshot was a fifth of an assignor's listing), or,
// after a removal, every key is sorted again. Callers hold mu.
func (m *mirror) sortKeys() {
	if m.reorder {
		m.order = m.order[:0]
		for key, e := range m.entries {
			if e.kind != sessionKey {
				m.order = append(m.order, key)
			}
		}
		slices.Sort(m.order)
		m.added, m.reorder = nil, false
		return
	}
	if len(m.added) == 0 {
		return
	}
	slices.Sort(m.added)
	merged := make([]string, 0, len(m.order)+len(m.added))
	i, j := 0, 0
	for i < len(m.order) && j < len(m.added) {
		if m.order[i] < m.added[j] {
			merged, i = append(merged, m.order[i]), i+1
		} else {
			merged, j = append(merged, m.added[j]), j+1
		}
	}
	merged = append(append(merged, m.order[i:]...), m.added[j:]...)
	m.order, m.added = merged, nil
}

package fleettest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/shard"
)

// kvShard is one shard key as a separate client reads it.
type kvShard struct {
	session string
	token   uint64 // the key's ModifyIndex: the holder's fencing token
	worker  string // the value's owner ("" when the value does not parse)
}

// fleetSnap is one consistent reading of a fleet's keys and Consul's live
// sessions.
type fleetSnap struct {
	index    uint64
	shards   map[shard.ID]kvShard
	members  map[string]string // member id → session ("" when dead)
	sessions map[string]string // live session → its name (the worker id)
}

// holders maps each live member's session to its id.
func (s fleetSnap) holders() map[string]string {
	out := map[string]string{}
	for id, sess := range s.members {
		if sess != "" {
			out[sess] = id
		}
	}
	return out
}

// counts returns the shards owned by each live member (0 for none) and how
// many shards a live member owns in all.
func (s fleetSnap) counts() (map[string]int, int) {
	counts := map[string]int{}
	for id, sess := range s.members {
		if sess != "" {
			counts[id] = 0
		}
	}
	owned := 0
	h := s.holders()
	for _, st := range s.shards {
		if id, ok := h[st.session]; ok && st.session != "" {
			counts[id]++
			owned++
		}
	}
	return counts, owned
}

// converged: every shard owned by a live member, want live members, counts
// within one.
func (s fleetSnap) converged(shards, want int) bool {
	counts, owned := s.counts()
	return owned == shards && len(counts) == want && spread(counts) <= 1
}

// ownedBy returns the shards member id's session holds, with their tokens.
func (s fleetSnap) ownedBy(id string) (string, map[shard.ID]uint64) {
	sess := s.members[id]
	out := map[shard.ID]uint64{}
	if sess == "" {
		return "", out
	}
	for sh, st := range s.shards {
		if st.session == sess {
			out[sh] = st.token
		}
	}
	return sess, out
}

func spread(counts map[string]int) int {
	if len(counts) == 0 {
		return 0
	}
	var ns []int
	for _, n := range counts {
		ns = append(ns, n)
	}
	return slices.Max(ns) - slices.Min(ns)
}

// monitor polls a fleet's keys from its own client, every 100 ms and
// whenever a test asks, and checks every consistent snapshot:
//
//   - a held shard is held by a session Consul has live;
//   - a parseable shard value names the worker whose session holds it;
//   - no worker id has two live sessions holding keys of the fleet;
//   - per shard, the token (ModifyIndex) never decreases, and is strictly
//     higher whenever the holder changes.
//
// A snapshot whose index is below one already judged is a stale read (a
// newly elected leader answering before it applied what the old one
// committed) and is skipped. Violations are recorded (never t.Fatal from
// the polling goroutine) and reported by close.
type monitor struct {
	t       *testing.T
	clients []*api.Client // read in turn: the next one after a failure
	prefix  string
	ids     map[shard.ID]bool
	// patience is how long snapshot waits for Consul to answer.
	patience time.Duration

	mu         sync.Mutex
	tokens     map[shard.ID]uint64 // last token seen
	holder     map[shard.ID]string // last session seen holding it
	violations []string
	snaps      int
	failures   int
	stale      int
	next       int // index of the client to read from
	last       fleetSnap

	cancel context.CancelFunc
	done   chan struct{}
}

// newMonitor polls the fleet under prefix through clients (several: a
// cluster's servers, so that one that cannot answer is skipped).
func newMonitor(t *testing.T, prefix string, shards int, clients ...*api.Client) *monitor {
	ctx, cancel := context.WithCancel(context.Background())
	m := &monitor{t: t, clients: clients, prefix: prefix, ids: map[shard.ID]bool{}, patience: 10 * time.Second,
		tokens: map[shard.ID]uint64{}, holder: map[shard.ID]string{}, cancel: cancel, done: make(chan struct{})}
	for _, id := range (shard.Config{Shards: shards}).IDs() {
		m.ids[id] = true
	}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_, _ = m.poll(ctx)
			}
		}
	}()
	return m
}

// snapshot takes a checked snapshot now, retrying for up to m.patience
// while Consul does not answer (a leader election).
func (m *monitor) snapshot() fleetSnap {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), m.patience)
	defer cancel()
	for {
		s, err := m.poll(ctx)
		if err == nil {
			return s
		}
		if ctx.Err() != nil {
			m.t.Fatalf("monitor: no consistent snapshot within %v: %v", m.patience, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// poll reads one consistent snapshot and checks it. Consistent: the
// prefix's index is the same before and after the session list was read,
// so every session holding a key at that index was live when listed.
func (m *monitor) poll(ctx context.Context) (fleetSnap, error) {
	m.mu.Lock() // one poll at a time: checks compare with the previous one
	defer m.mu.Unlock()
	s, err := m.read(ctx, m.clients[m.next%len(m.clients)])
	if err != nil {
		m.failures++
		m.next++
		return s, err
	}
	if s.index < m.last.index {
		// A stale read: a newly elected leader answers before it has
		// applied what the old one committed. Only a snapshot at or past
		// the newest index seen is judged.
		m.stale++
		return m.last, nil
	}
	m.snaps++
	m.check(s)
	m.last = s
	return s, nil
}

func (m *monitor) read(ctx context.Context, c *api.Client) (fleetSnap, error) {
	for attempt := 0; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		q := (&api.QueryOptions{}).WithContext(rctx)
		pairs, meta, err := c.KV().List(m.prefix+"/", q)
		var sessions []*api.SessionEntry
		var meta2 *api.QueryMeta
		if err == nil {
			sessions, _, err = c.Session().List(q)
		}
		if err == nil {
			_, meta2, err = c.KV().Keys(m.prefix+"/", "", q)
		}
		cancel()
		if err != nil {
			return fleetSnap{}, err
		}
		if meta.LastIndex != meta2.LastIndex {
			if attempt > 20 {
				return fleetSnap{}, fmt.Errorf("the fleet's keys kept changing while sessions were listed")
			}
			continue
		}
		s := fleetSnap{index: meta.LastIndex, shards: map[shard.ID]kvShard{}, members: map[string]string{}, sessions: map[string]string{}}
		for _, e := range sessions {
			s.sessions[e.ID] = e.Name
		}
		for _, p := range pairs {
			rest := strings.TrimPrefix(p.Key, m.prefix+"/")
			switch {
			case strings.HasPrefix(rest, "shards/"):
				id := shard.ID(strings.TrimPrefix(rest, "shards/"))
				if !m.ids[id] {
					continue // a foreign key a test put there
				}
				var o shard.Owner
				_ = json.Unmarshal(p.Value, &o)
				s.shards[id] = kvShard{session: p.Session, token: p.ModifyIndex, worker: o.Worker}
			case strings.HasPrefix(rest, "members/"):
				s.members[strings.TrimPrefix(rest, "members/")] = p.Session
			}
		}
		return s, nil
	}
}

func (m *monitor) check(s fleetSnap) {
	bad := func(format string, args ...any) {
		m.violations = append(m.violations, fmt.Sprintf("index %d: ", s.index)+fmt.Sprintf(format, args...))
	}
	sessionsOf := map[string]map[string]bool{} // worker name → live sessions holding keys
	hold := func(sess string) {
		name := s.sessions[sess]
		if sessionsOf[name] == nil {
			sessionsOf[name] = map[string]bool{}
		}
		sessionsOf[name][sess] = true
	}
	for id, sess := range s.members {
		if sess == "" {
			continue
		}
		if _, live := s.sessions[sess]; !live {
			bad("member %s held by session %s, which Consul does not have", id, sess)
		}
		hold(sess)
	}
	for id, st := range s.shards {
		if st.session != "" {
			name, live := s.sessions[st.session]
			switch {
			case !live:
				bad("%s held by session %s, which Consul does not have", id, st.session)
			case st.worker != "" && st.worker != name:
				bad("%s: value names owner %q, but it is held by session %s of %q", id, st.worker, st.session, name)
			}
			hold(st.session)
		}
		prev, seen := m.tokens[id]
		switch {
		case seen && st.token < prev:
			bad("%s: token went back from %d to %d", id, prev, st.token)
		case seen && st.session != "" && st.session != m.holder[id] && st.token <= prev:
			bad("%s: new holder %s with token %d, not above the previous %d", id, st.session, st.token, prev)
		}
		m.tokens[id] = st.token
		if st.session != "" {
			m.holder[id] = st.session
		}
	}
	for name, ss := range sessionsOf {
		if len(ss) > 1 {
			bad("worker %q has %d live sessions holding keys: %v", name, len(ss), ss)
		}
	}
}

// close stops polling and fails the test for every violation seen.
func (m *monitor) close() {
	m.cancel()
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	m.t.Logf("monitor: %d consistent snapshots checked (%d polls failed: Consul unavailable or busy; %d stale reads skipped)", m.snaps, m.failures, m.stale)
	for i, v := range m.violations {
		if i == 20 {
			m.t.Errorf("monitor: … and %d more violations", len(m.violations)-20)
			break
		}
		m.t.Errorf("monitor: %s", v)
	}
	if m.snaps == 0 {
		m.t.Errorf("monitor: no snapshot was ever checked")
	}
}

func randomName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

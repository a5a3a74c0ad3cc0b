package memory_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newSession opens a session for worker or fails the test.
func newSession(t *testing.T, c *memory.Coordinator, worker string, ttl, lockDelay time.Duration) shard.SessionID {
	t.Helper()
	id, err := c.Sessions().Create(t.Context(), shard.SessionSpec{Worker: worker, TTL: ttl, LockDelay: lockDelay})
	if err != nil {
		t.Fatalf("CreateSession(%s): %v", worker, err)
	}
	return id
}

// acquire asks for shards with reason "test" and returns the tokens granted.
func acquire(t *testing.T, c *memory.Coordinator, sid shard.SessionID, ids ...shard.ID) map[shard.ID]shard.Token {
	t.Helper()
	want := make([]shard.Acquisition, len(ids))
	for i, id := range ids {
		want[i] = shard.AcquireShard(id, "test")
	}
	claims, err := c.Locks().Acquire(t.Context(), sid, want)
	if err != nil {
		t.Fatalf("Acquire(%s, %v): %v", sid, ids, err)
	}
	got := make(map[shard.ID]shard.Token, len(claims))
	for _, g := range claims {
		cl, _ := g.Claim()
		got[cl.Shard] = cl.Token
	}
	return got
}

// snapshot returns the current snapshot without blocking.
func snapshot(t *testing.T, c *memory.Coordinator) shard.Snapshot {
	t.Helper()
	snap, err := c.Fleet().Watch(t.Context(), 0)
	if err != nil {
		t.Fatalf("Watch(0): %v", err)
	}
	return snap
}

// holder returns the session holding a shard in a fresh snapshot ("" if free
// or missing).
func holder(t *testing.T, c *memory.Coordinator, id shard.ID) shard.SessionID {
	t.Helper()
	s, _ := snapshot(t, c).Shard(id)
	return s.Session
}

// watchResult is what a background Watch returned, and when.
type watchResult struct {
	snap shard.Snapshot
	err  error
	at   time.Time
}

// watchAsync runs Watch(ctx, after) on its own goroutine; the result arrives
// on the returned channel (buffered, so the goroutine never leaks).
func watchAsync(ctx context.Context, c *memory.Coordinator, after uint64) <-chan watchResult {
	ch := make(chan watchResult, 1)
	go func() {
		snap, err := c.Fleet().Watch(ctx, after)
		ch <- watchResult{snap: snap, err: err, at: time.Now()}
	}()
	return ch
}

// manualClock is a Clock whose time moves only when the test says so and
// whose timers never fire: with it, only the coordinator's lazy catch-up at
// the start of each call can apply expiries.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (m *manualClock) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

func (m *manualClock) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
}

func (m *manualClock) AfterFunc(time.Duration, func()) memory.Timer { return inertTimer{} }

type inertTimer struct{}

func (inertTimer) Stop() bool { return true }

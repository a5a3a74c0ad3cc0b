package inproc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// Errors.
var (
	// ErrCrashed: a commit was on its way from a member that crashed; it
	// never reaches the store.
	ErrCrashed = errors.New("inproc: the member crashed")
	// ErrStarted: Fleet.Start was given a member already started.
	ErrStarted = errors.New("inproc: member already started")
)

// Member is one worker process of a Fleet: its worker.Worker, the fault
// layer on its coordinator and the gate that freezes its handlers. E is
// what the Fleet's user keeps beside each member (its own fault handles);
// Ext holds it, set before Start. A worker restarted under an old ID is a
// new Member.
type Member[E any] struct {
	// ID is the worker's ID.
	ID string
	// N numbers the members of a Fleet in the order they were made, from
	// 1: an identity for this process that a restart does not share.
	N int
	// Ext is the user's own state for this member.
	Ext E

	faults *faults.Coordinator
	gate   faults.Gate // closed: the process is frozen (its handlers stop where they are)
	killed context.Context
	kill   context.CancelFunc
	dead   atomic.Bool // crashed: frozen handlers never write again
	left   atomic.Bool // told to leave

	w      *worker.Worker
	ctx    context.Context // the worker's Run's; ends on a crash or a leave
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned; err is set then
	err    error

	mu    sync.Mutex
	holds map[string]Hold // the faults in force, by key
}

// Hold is one fault's grip on a member: the mode it puts its coordinator
// calls in, and whether it freezes the process (closes its gate).
type Hold struct {
	Mode   faults.Mode
	Freeze bool
}

// Coordinator is the member's fault layer: the coordinator its worker is
// to reach, directly or through wrappers of the caller's own.
func (m *Member[E]) Coordinator() *faults.Coordinator { return m.faults }

// Worker is the member's worker; nil before Start.
func (m *Member[E]) Worker() *worker.Worker { return m.w }

// Crashed reports whether the member crashed.
func (m *Member[E]) Crashed() bool { return m.dead.Load() }

// Left reports whether the member was told to leave.
func (m *Member[E]) Left() bool { return m.left.Load() }

// Running reports whether the member should be running: neither crashed
// nor told to leave.
func (m *Member[E]) Running() bool { return !m.dead.Load() && !m.left.Load() }

// Killed ends when the member crashes: what a frozen process waits on
// besides its gate.
func (m *Member[E]) Killed() context.Context { return m.killed }

// WaitThawed returns at once unless the member is frozen; then it blocks
// until it thaws (true) or ctx ends (false). A frozen process does not
// notice its context ending: pass context.Background() to simulate that.
func (m *Member[E]) WaitThawed(ctx context.Context) bool { return m.gate.Wait(ctx) }

// Done is closed when the member's Run has returned; Err is its result.
func (m *Member[E]) Done() <-chan struct{} { return m.done }

// Err is what the member's Run returned, once Done is closed.
func (m *Member[E]) Err() error {
	<-m.done
	return m.err
}

// Hold puts a fault in force under key until Unhold(key). Faults may
// overlap on one member, and the heal of one must not end another: the
// calls hang while any fault hangs them, fail while any other fails them,
// and the gate stays closed while any fault freezes the process.
func (m *Member[E]) Hold(key string, h Hold) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.holds == nil {
		m.holds = map[string]Hold{}
	}
	m.holds[key] = h
	m.applyHolds()
}

// Unhold ends the fault under key; ending one not in force changes nothing
// else.
func (m *Member[E]) Unhold(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.holds, key)
	m.applyHolds()
}

// heal ends every fault in force.
func (m *Member[E]) heal() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.holds)
	m.applyHolds()
}

// applyHolds sets the fault layer and the gate from the holds; m.mu held.
func (m *Member[E]) applyHolds() {
	if m.dead.Load() {
		return // a crash is for good: calls fail, the gate stays closed
	}
	mode, freeze := faults.Healthy, false
	for _, h := range m.holds {
		switch { // a hang wins over a failure: a frozen process fails nothing
		case h.Mode == faults.Hang:
			mode = faults.Hang
		case h.Mode == faults.Fail && mode != faults.Hang:
			mode = faults.Fail
		}
		freeze = freeze || h.Freeze
	}
	m.faults.Set(mode)
	if freeze {
		m.gate.Close()
	} else {
		m.gate.Open()
	}
}

// Crash crashes the member for good: every call it makes fails, its
// handlers freeze at the gate forever, and it never releases anything, so
// its shards move only when the coordinator invalidates its session. Its
// Run returns after its drain timeout. Crashed is true, and Killed has
// ended, before anything else changes.
func (m *Member[E]) Crash() {
	m.mu.Lock()
	m.dead.Store(true)
	m.kill()
	m.gate.Close()
	m.faults.Set(faults.Fail)
	m.mu.Unlock()
	m.cancel()
}

// Leave stops the member gracefully: its worker drains, releases its
// shards and ends its session. Faults in force stay in force until healed.
func (m *Member[E]) Leave() {
	m.left.Store(true)
	m.cancel()
}

// Wire returns s as this member reaches it: while the member is frozen its
// commits stop after they left the handler (and passed the claim's own
// authority check), and reach s only when it thaws — late, with whatever
// token they carry, and cancelling them then cannot call them back. A
// crashed member's frozen commits never arrive (ErrCrashed).
func (m *Member[E]) Wire(s offsets.Store) offsets.Store { return wire[E]{Store: s, m: m} }

type wire[E any] struct {
	offsets.Store
	m *Member[E]
}

func (w wire[E]) Commit(ctx context.Context, s shard.ID, token shard.Token, offset int64) error {
	w.m.gate.Wait(context.Background())
	if w.m.dead.Load() {
		return fmt.Errorf("%w: %s crashed with this commit on its way: it never arrives", ErrCrashed, w.m.ID)
	}
	return w.Store.Commit(context.WithoutCancel(ctx), s, token, offset)
}

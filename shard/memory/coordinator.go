package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// MaxTxnShards is how many shards one transaction locks or unlocks. Consul
// caps a transaction at 128 operations and shardlease spends two per shard (a
// lock and a get that reads the token) after one that checks the fleet's
// config, so an Acquire or Release of more shards is split into several
// transactions, each with its own index. The embedded coordinator keeps the
// same cap so that tokens and write counts in tests look like production.
const MaxTxnShards = 63

// DefaultMemberGrace is how long a dead member key (one whose session ended)
// stays visible before it is deleted.
const DefaultMemberGrace = time.Minute

// Coordinator is the embedded coordinator: a tiny key-value store with
// Consul's session, lock and blocking-query semantics, held in memory. Create
// it with New; the zero value is not usable. All methods are safe for
// concurrent use.
type Coordinator struct {
	clock       Clock
	memberGrace time.Duration

	// mu guards everything below. Every method holds it for its whole run,
	// which is what makes a call (even one split into several transactions)
	// atomic with respect to every other call and to watchers.
	mu sync.Mutex
	// index is the store's write index: 1 when empty, +1 per write. It is
	// the ModifyIndex of the keys a write touches, hence the fencing token.
	index uint64
	// changed is closed and replaced by every write, waking every watcher.
	changed chan struct{}

	config *shard.Config
	// genFloor is the least generation locks are taken in (WithStartToken,
	// and the highest the stored config ever had): a config stored again
	// starts there.
	genFloor uint32
	known    *fleetkeys.ShardSet // the config's shard set; nil until configured

	sessions    map[shard.SessionID]*session
	nextSession uint64

	members map[string]*memberKey
	// memberGone holds the index of the write that deleted a member key,
	// so a watch on a missing key wakes once, for the deletion.
	memberGone map[string]uint64
	// locks are the lock keys: P/shards/<id> and the roles' (P/assignor).
	locks map[shard.Lock]*lockKey
	// lockGone holds the index of the write that deleted a lock key.
	lockGone map[shard.Lock]uint64
	// reports are the workers' report keys, by kind and worker
	// (P/loads/<worker>, P/standby/<worker>; see reports.go).
	reports [reportKinds]map[string]*reportKey
	// lockDelay holds, per lock, the moment its lock-delay ends. It lives
	// beside the keys, not in them, so that deleting a key does not lift its
	// lock-delay (as in Consul).
	lockDelay map[shard.Lock]time.Time

	// assigns are the assignment keys P/assign/<worker>; assignGone holds
	// the index of the write that deleted one.
	assigns    map[string]*assignKey
	assignGone map[string]uint64
	// freeze is P/freeze, nil while missing.
	freeze *shard.Mark
	// policy is P/policy, nil while missing.
	policy *shard.BalancePolicy
	// history is P/history (see history.go).
	history historyKey
}

// memberKey is P/members/<id>.
type memberKey struct {
	member  shard.Member
	session shard.SessionID // empty: dead member
	index   uint64
	// deadSince is when the key lost its session (zero while live); the key
	// is deleted at collectAt, and gcTimer makes sure that
	// happens even if nobody calls the coordinator.
	deadSince time.Time
	gcTimer   Timer
}

var _ shard.Coordinator = (*Coordinator)(nil)

// Option configures a Coordinator.
type Option func(*Coordinator)

// WithClock makes the coordinator read time and schedule expiries on c
// instead of the time package. A nil c keeps the time package.
func WithClock(c Clock) Option {
	return func(co *Coordinator) {
		if c != nil {
			co.clock = c
		}
	}
}

// WithMemberGrace sets how long a dead member key stays visible before it is
// deleted (default DefaultMemberGrace). Zero or less deletes it right after
// its session ends, in a write of its own.
func WithMemberGrace(d time.Duration) Option {
	return func(co *Coordinator) { co.memberGrace = max(d, 0) }
}

// WithStartIndex starts the store's index at n instead of 1 (n below 1 counts
// as 1, n above shard.MaxIndex as shard.MaxIndex), so every token of
// generation 0 it hands out is above n.
func WithStartIndex(n uint64) Option {
	return func(co *Coordinator) { co.index = min(max(n, 1), shard.MaxIndex) }
}

// WithStartToken makes every token the coordinator hands out higher than t:
// its index starts above t's, and its fleet's generation is at least t's
// (the config it stores gets it). Use it when offsets outlive the
// coordinator, e.g. an embedded coordinator in front of a file-backed
// offsets store: start above the highest token the store has recorded, or a
// restarted process would see all its commits refused as stale.
func WithStartToken(t shard.Token) Option {
	return func(co *Coordinator) {
		co.index = min(max(t.Index()+1, 1), shard.MaxIndex)
		co.genFloor = t.Generation()
	}
}

// New returns an empty coordinator, at index 1 unless WithStartIndex says
// otherwise.
//
// In a testing/synctest bubble, create the coordinator inside the bubble: its
// watch channel and timers then belong to the bubble, so a blocked watcher is
// durably blocked and the fake clock advances past session TTLs.
func New(opts ...Option) *Coordinator {
	c := &Coordinator{
		clock:       realClock{},
		memberGrace: DefaultMemberGrace,
		index:       1,
		changed:     make(chan struct{}),
		sessions:    make(map[shard.SessionID]*session),
		members:     make(map[string]*memberKey),
		memberGone:  make(map[string]uint64),
		locks:       make(map[shard.Lock]*lockKey),
		lockGone:    make(map[shard.Lock]uint64),
		reports:     [reportKinds]map[string]*reportKey{{}, {}},
		lockDelay:   make(map[shard.Lock]time.Time),
		assigns:     make(map[string]*assignKey),
		assignGone:  make(map[string]uint64),
	}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// fleet is the coordinator's shard.Fleet.
type fleet struct{ c *Coordinator }

// Fleet returns the coordinator's fleet keys: config, freeze, and the
// whole view.
func (c *Coordinator) Fleet() shard.Fleet { return fleet{c} }

// Configure stores cfg (normalized: its Protocol is this build's unless it
// names one) as the fleet's config if none is stored, in one write. If the
// same config is stored it returns it without a write; if a different one
// is (another shard set or another protocol), it returns the stored config
// and shard.ConfigMismatch's error, which names both. An invalid cfg gets
// cfg.Validate's error and changes nothing. cfg's Generation is not
// written: a new fleet starts at generation 0 (or WithStartToken's), and
// only RaiseGeneration changes it.
func (f fleet) Configure(ctx context.Context, cfg shard.Config) (shard.Config, error) {
	c := f.c
	if err := ctxErr(ctx); err != nil {
		return shard.Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return shard.Config{}, err
	}
	cfg = cfg.Normalize()

	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	if c.config != nil {
		stored := *c.config
		return stored, shard.ConfigMismatch(stored, cfg)
	}
	c.commitLocked()
	cfg.Generation = c.genFloor // a new fleet's is 0; only RaiseGeneration raises it
	c.config = &cfg
	c.known = fleetkeys.NewShardSet(cfg)
	return cfg, nil
}

// DeleteShard deletes a shard's lock key, as an operator might in Consul, and
// reports whether it existed. Deleting is a write, so the shard's next owner
// still gets a higher token than every earlier one. A session that held the
// key simply no longer holds it; a pending lock-delay on the shard remains.
func (c *Coordinator) DeleteShard(id shard.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()
	return c.deleteLockLocked(shard.ShardLock(id))
}

// DeleteFreeShard deletes a shard's lock key only if no session holds it,
// as shard/consul's does in one check-and-delete; a held key is refused
// with shard.ErrKeyHeld. It reports whether the key existed.
func (c *Coordinator) DeleteFreeShard(_ context.Context, id shard.ID) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	st, ok := c.locks[shard.ShardLock(id)]
	if !ok {
		return false, nil
	}
	if st.session != "" {
		return true, fmt.Errorf("%w: shard %s is held by session %s", shard.ErrKeyHeld, id, st.session)
	}
	return c.deleteLockLocked(shard.ShardLock(id)), nil
}

// LiveSessions returns the live sessions, oldest first. Sessions are not part of
// a Snapshot (as in Consul, they are not keys); this is for operators and
// tests.
func (c *Coordinator) LiveSessions() []shard.SessionID {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	live := make([]*session, 0, len(c.sessions))
	for _, s := range c.sessions {
		live = append(live, s)
	}
	slices.SortFunc(live, func(a, b *session) int { return cmp.Compare(a.seq, b.seq) })
	ids := make([]shard.SessionID, len(live))
	for i, s := range live {
		ids[i] = s.id
	}
	return ids
}

// commitLocked starts a write: the index advances, becomes the ModifyIndex of
// every key the write touches, and every watcher is woken. Watchers cannot
// see the write half-done: they re-read under mu, which the writer holds.
func (c *Coordinator) commitLocked() uint64 {
	c.index++
	close(c.changed)
	c.changed = make(chan struct{})
	return c.index
}

// scheduleLocked makes sure the coordinator catches up at the moment at, even
// if nobody calls it then. The timer only triggers a catch-up; what is due is
// decided from the state, so a stale timer is harmless.
func (c *Coordinator) scheduleLocked(at time.Time) Timer {
	return c.clock.AfterFunc(max(at.Sub(c.clock.Now()), 0), c.tick)
}

func (c *Coordinator) tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()
}

// ctxErr returns the reason ctx ended, or nil while it is live.
func ctxErr(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// SetLayouts rewrites the stored config's layouts from from to to
// (shard.NextLayouts), in one write; every worker of the coordinator runs
// the new config at once.
func (f fleet) SetLayouts(ctx context.Context, from, to []shard.Layout) (shard.Config, error) {
	c := f.c
	if err := ctxErr(ctx); err != nil {
		return shard.Config{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()
	if c.config == nil {
		return shard.Config{}, shard.NoConfigToRaise()
	}
	next, err := shard.NextLayouts(*c.config, from, to)
	if err != nil {
		return next, err
	}
	c.commitLocked()
	c.config = &next
	c.known = fleetkeys.NewShardSet(next)
	return next, nil
}

// RaiseGeneration rewrites the stored config with Generation gen, in one
// write, if gen is above the stored generation.
func (f fleet) RaiseGeneration(ctx context.Context, gen uint32) (shard.Config, error) {
	c := f.c
	if err := ctxErr(ctx); err != nil {
		return shard.Config{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()
	if c.config == nil {
		return shard.Config{}, shard.NoConfigToRaise()
	}
	if err := shard.CheckRaise(c.config.Generation, gen); err != nil {
		return *c.config, err
	}
	c.commitLocked()
	c.config.Generation = gen
	c.genFloor = max(c.genFloor, gen)
	return *c.config, nil
}

// generationLocked is the generation new locks are taken in: the stored
// config's, or genFloor if higher.
func (c *Coordinator) generationLocked() uint32 {
	if c.config == nil {
		return c.genFloor
	}
	return max(c.config.Generation, c.genFloor)
}

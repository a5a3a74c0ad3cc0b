package shard

import (
	"context"
	"time"
)

// Op names one method of a Coordinator's parts, e.g. "locks.acquire".
type Op string

// The operations, one per method.
const (
	OpCreateSession   Op = "sessions.create"
	OpRenewSession    Op = "sessions.renew"
	OpDestroySession  Op = "sessions.destroy"
	OpAcquire         Op = "locks.acquire"
	OpRelease         Op = "locks.release"
	OpWatchLock       Op = "locks.watch"
	OpJoin            Op = "members.join"
	OpWatchMember     Op = "members.watch"
	OpReportLoad      Op = "members.report_load"
	OpReportStandby   Op = "members.report_standby"
	OpAssign          Op = "assignments.assign"
	OpWatchAssignment Op = "assignments.watch"
	OpConfigure       Op = "fleet.configure"
	OpSetFreeze       Op = "fleet.set_freeze"
	OpSetPolicy       Op = "fleet.set_policy"
	OpRaiseGeneration Op = "fleet.raise_generation"
	OpSetLayouts      Op = "fleet.set_layouts"
	OpWatchFleet      Op = "fleet.watch"
	OpRecordHistory   Op = "history.record"
	OpReadHistory     Op = "history.read"
)

// Blocking reports whether op is a blocking query (a Watch): one that may
// wait for a change before it answers.
func (op Op) Blocking() bool {
	return op == OpWatchLock || op == OpWatchMember || op == OpWatchAssignment || op == OpWatchFleet
}

// Call is one call an Interceptor sees: what is asked, and, once invoke
// returned, what some calls answered.
type Call struct {
	Op Op
	// Session is the session the call acts with; for OpCreateSession it
	// is set once invoke returned (empty if the create failed).
	Session SessionID
	// Worker is the worker the call names: a session's (OpCreateSession),
	// a member key's, an assignment key's, a loads key's.
	Worker string
	// Lock is the lock an OpWatchLock follows; Locks are the locks an
	// OpAcquire asks for or an OpRelease releases.
	Lock  Lock
	Locks []Lock
	// Grants are what an OpAcquire granted, once invoke returned (also
	// those granted before an error).
	Grants []Grant
	// Epoch is an OpAssign's or OpRecordHistory's epoch, and Keys how
	// many assignment keys an OpAssign writes or deletes.
	Epoch Token
	Keys  int
	// Member is the registration an OpJoin writes.
	Member *Member
	// After is the index a blocking query waits past (0: it answers at
	// once).
	After uint64
}

// An Interceptor is given every call of a Coordinator that Intercept
// returned, before it reaches the coordinator. It runs the call with
// invoke (possibly with another context, later, or not at all) and
// returns the call's error, or an error of its own instead: it may fail
// a call, delay it or its reply, hold it, or watch what it did. invoke
// may be called at most once. Interceptors must be safe for concurrent
// use.
type Interceptor func(ctx context.Context, call *Call, invoke func(ctx context.Context) error) error

// Intercept returns c with every call of every part passed through f.
// It is the one place where fault injection, a paused process, a
// simulated network or a counter wraps a coordinator: they write one
// function, not a forwarder per method.
func Intercept(c Coordinator, f Interceptor) Coordinator {
	return intercepted{c, f}
}

type intercepted struct {
	c Coordinator
	f Interceptor
}

func (i intercepted) Sessions() Sessions       { return iSessions{i.c.Sessions(), i.f} }
func (i intercepted) Locks() Locks             { return iLocks{i.c.Locks(), i.f} }
func (i intercepted) Members() Members         { return iMembers{i.c.Members(), i.f} }
func (i intercepted) Assignments() Assignments { return iAssignments{i.c.Assignments(), i.f} }
func (i intercepted) Fleet() Fleet             { return iFleet{i.c.Fleet(), i.f} }
func (i intercepted) History() History         { return iHistory{i.c.History(), i.f} }

type iSessions struct {
	in Sessions
	f  Interceptor
}

func (s iSessions) Create(ctx context.Context, spec SessionSpec) (SessionID, error) {
	call := &Call{Op: OpCreateSession, Worker: spec.Worker}
	err := s.f(ctx, call, func(ctx context.Context) (err error) {
		call.Session, err = s.in.Create(ctx, spec)
		return err
	})
	if err != nil {
		return "", err
	}
	return call.Session, nil
}

func (s iSessions) Renew(ctx context.Context, id SessionID) error {
	return s.f(ctx, &Call{Op: OpRenewSession, Session: id}, func(ctx context.Context) error { return s.in.Renew(ctx, id) })
}

func (s iSessions) Destroy(ctx context.Context, id SessionID) error {
	return s.f(ctx, &Call{Op: OpDestroySession, Session: id}, func(ctx context.Context) error { return s.in.Destroy(ctx, id) })
}

type iLocks struct {
	in Locks
	f  Interceptor
}

func (l iLocks) Acquire(ctx context.Context, id SessionID, want []Acquisition) ([]Grant, error) {
	locks := make([]Lock, len(want))
	for i, a := range want {
		locks[i] = a.Lock
	}
	call := &Call{Op: OpAcquire, Session: id, Locks: locks}
	var granted bool
	err := l.f(ctx, call, func(ctx context.Context) (err error) {
		call.Grants, err = l.in.Acquire(ctx, id, want)
		granted = true
		return err
	})
	if !granted {
		return nil, err
	}
	return call.Grants, err
}

func (l iLocks) Release(ctx context.Context, id SessionID, locks []Lock, why Reason) error {
	return l.f(ctx, &Call{Op: OpRelease, Session: id, Locks: locks}, func(ctx context.Context) error {
		return l.in.Release(ctx, id, locks, why)
	})
}

func (l iLocks) Watch(ctx context.Context, lock Lock, after uint64) (LockKey, error) {
	var k LockKey
	err := l.f(ctx, &Call{Op: OpWatchLock, Lock: lock, After: after}, func(ctx context.Context) (err error) {
		k, err = l.in.Watch(ctx, lock, after)
		return err
	})
	if err != nil {
		return LockKey{}, err
	}
	return k, nil
}

type iMembers struct {
	in Members
	f  Interceptor
}

func (m iMembers) Join(ctx context.Context, id SessionID, mem Member) error {
	return m.f(ctx, &Call{Op: OpJoin, Session: id, Worker: mem.ID, Member: &mem}, func(ctx context.Context) error { return m.in.Join(ctx, id, mem) })
}

func (m iMembers) Watch(ctx context.Context, id string, after uint64) (MemberKey, error) {
	var k MemberKey
	err := m.f(ctx, &Call{Op: OpWatchMember, Worker: id, After: after}, func(ctx context.Context) (err error) {
		k, err = m.in.Watch(ctx, id, after)
		return err
	})
	if err != nil {
		return MemberKey{}, err
	}
	return k, nil
}

func (m iMembers) ReportLoad(ctx context.Context, id SessionID, worker string, load map[ID]float64) error {
	return m.f(ctx, &Call{Op: OpReportLoad, Session: id, Worker: worker}, func(ctx context.Context) error {
		return m.in.ReportLoad(ctx, id, worker, load)
	})
}

func (m iMembers) ReportStandby(ctx context.Context, id SessionID, worker string, states map[ID]StandbyState) error {
	return m.f(ctx, &Call{Op: OpReportStandby, Session: id, Worker: worker}, func(ctx context.Context) error {
		return m.in.ReportStandby(ctx, id, worker, states)
	})
}

type iAssignments struct {
	in Assignments
	f  Interceptor
}

func (a iAssignments) Assign(ctx context.Context, id SessionID, epoch Token, set map[string]*Assignment) error {
	return a.f(ctx, &Call{Op: OpAssign, Session: id, Epoch: epoch, Keys: len(set)}, func(ctx context.Context) error {
		return a.in.Assign(ctx, id, epoch, set)
	})
}

func (a iAssignments) Watch(ctx context.Context, worker string, after uint64) (AssignmentKey, error) {
	var k AssignmentKey
	err := a.f(ctx, &Call{Op: OpWatchAssignment, Worker: worker, After: after}, func(ctx context.Context) (err error) {
		k, err = a.in.Watch(ctx, worker, after)
		return err
	})
	if err != nil {
		return AssignmentKey{}, err
	}
	return k, nil
}

type iFleet struct {
	in Fleet
	f  Interceptor
}

func (fl iFleet) Configure(ctx context.Context, cfg Config) (Config, error) {
	var stored Config
	err := fl.f(ctx, &Call{Op: OpConfigure}, func(ctx context.Context) (err error) {
		stored, err = fl.in.Configure(ctx, cfg)
		return err
	})
	return stored, err
}

func (fl iFleet) SetFreeze(ctx context.Context, mark *Mark) error {
	return fl.f(ctx, &Call{Op: OpSetFreeze}, func(ctx context.Context) error { return fl.in.SetFreeze(ctx, mark) })
}

func (fl iFleet) SetPolicy(ctx context.Context, p BalancePolicy, ifNone bool) (BalancePolicy, error) {
	var stored BalancePolicy
	err := fl.f(ctx, &Call{Op: OpSetPolicy}, func(ctx context.Context) (err error) {
		stored, err = fl.in.SetPolicy(ctx, p, ifNone)
		return err
	})
	return stored, err
}

func (fl iFleet) RaiseGeneration(ctx context.Context, gen uint32) (Config, error) {
	var stored Config
	err := fl.f(ctx, &Call{Op: OpRaiseGeneration}, func(ctx context.Context) (err error) {
		stored, err = fl.in.RaiseGeneration(ctx, gen)
		return err
	})
	return stored, err
}

func (fl iFleet) SetLayouts(ctx context.Context, from, to []Layout) (Config, error) {
	var stored Config
	err := fl.f(ctx, &Call{Op: OpSetLayouts}, func(ctx context.Context) (err error) {
		stored, err = fl.in.SetLayouts(ctx, from, to)
		return err
	})
	return stored, err
}

func (fl iFleet) Watch(ctx context.Context, after uint64) (Snapshot, error) {
	var s Snapshot
	err := fl.f(ctx, &Call{Op: OpWatchFleet, After: after}, func(ctx context.Context) (err error) {
		s, err = fl.in.Watch(ctx, after)
		return err
	})
	if err != nil {
		return Snapshot{}, err
	}
	return s, nil
}

type iHistory struct {
	in History
	f  Interceptor
}

func (h iHistory) Record(ctx context.Context, id SessionID, epoch Token, value []byte) error {
	return h.f(ctx, &Call{Op: OpRecordHistory, Session: id, Epoch: epoch}, func(ctx context.Context) error {
		return h.in.Record(ctx, id, epoch, value)
	})
}

func (h iHistory) Read(ctx context.Context) ([]byte, uint64, error) {
	var (
		value []byte
		index uint64
	)
	err := h.f(ctx, &Call{Op: OpReadHistory}, func(ctx context.Context) (err error) {
		value, index, err = h.in.Read(ctx)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return value, index, nil
}

// Hold is an Interceptor's building block for a paused process or a cut
// connection: it waits until release is closed (nil: returns at once) or
// ctx ends, and returns ctx's cause then.
func Hold(ctx context.Context, release <-chan struct{}) error {
	if release == nil {
		return nil
	}
	select {
	case <-release:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Delay is an Interceptor's building block for a slow network: it waits
// d (nothing when d ≤ 0) or until ctx ends, and returns ctx's cause then.
func Delay(ctx context.Context, d time.Duration) error {
	if !sleep(ctx, d) {
		return context.Cause(ctx)
	}
	return nil
}

package memory

import (
	"context"
	"fmt"
	"maps"

	"github.com/shardlease/shardlease/internal/keycodec"
	"github.com/shardlease/shardlease/shard"
)

// reportKind is one of a worker's report keys: keys of its own, held by
// its session beside its member key, that it writes without touching the
// member key (where operators set drains and cordons).
type reportKind int

const (
	reportLoads   reportKind = iota // P/loads/<worker>: shard.Member.Load
	reportStandby                   // P/standby/<worker>: shard.Member.Standby
	reportKinds
)

func (k reportKind) String() string { return [...]string{"loads", "standby"}[k] }

// reportKey is one report key: its value (a map[shard.ID]float64 or a
// map[shard.ID]shard.StandbyState, never shared with a caller) and the
// session that wrote it (empty once that session ended).
type reportKey struct {
	value   any
	session shard.SessionID
	index   uint64
}

// ReportLoad writes worker's loads key (report).
func (ms members) ReportLoad(ctx context.Context, id shard.SessionID, worker string, load map[shard.ID]float64) error {
	if _, err := keycodec.EncodeLoad(worker, load); err != nil && worker != "" {
		return err
	}
	return ms.c.report(ctx, id, worker, reportLoads, maps.Clone(load), maps.Keys(load))
}

// ReportStandby writes worker's standby key (report), or deletes it when
// states is empty, as shard/consul does. A fleet not configured yet wraps
// shard.ErrInvalidArgument.
func (ms members) ReportStandby(ctx context.Context, id shard.SessionID, worker string, states map[shard.ID]shard.StandbyState) error {
	c := ms.c
	c.mu.Lock()
	cfg := c.config
	c.mu.Unlock()
	if worker != "" {
		if cfg == nil {
			return fmt.Errorf("%w: report standby of worker %q: the fleet is not configured yet (Fleet.Configure first)", shard.ErrInvalidArgument, worker)
		}
		if _, err := keycodec.EncodeStandby(*cfg, worker, states); err != nil {
			return err
		}
	}
	var value any = maps.Clone(states)
	if len(states) == 0 {
		value = nil // nothing to report: no key
	}
	return c.report(ctx, id, worker, reportStandby, value, maps.Keys(states))
}

// report writes worker's report key of kind with the session, in one
// write, if the session holds worker's member key; the member key is not
// touched. Errors, each leaving everything as it was: an empty worker
// (shard.ErrInvalidArgument); a shard outside the stored config
// (shard.ErrUnknownShard); the session gone (shard.ErrSessionInvalid); the
// member key missing, dead or another session's (shard.ErrNotMember). The
// caller checked the value; a nil value deletes the key.
func (c *Coordinator) report(ctx context.Context, id shard.SessionID, worker string, kind reportKind, value any, shards func(func(shard.ID) bool)) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if worker == "" {
		return fmt.Errorf("%w: report %s: worker id is empty", shard.ErrInvalidArgument, kind)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	for sh := range shards {
		if err := c.checkShardLocked(sh); err != nil {
			return fmt.Errorf("%s of worker %q: %w", kind, worker, err)
		}
	}
	if _, err := c.liveSessionLocked(id); err != nil {
		return err
	}
	if m := c.members[worker]; m == nil || m.session != id {
		holder := "it is missing"
		if m != nil && m.session == "" {
			holder = "it is dead (held by no session)"
		} else if m != nil {
			holder = fmt.Sprintf("session %q holds it", m.session)
		}
		return fmt.Errorf("%w: session %q does not hold member key %q (%s): its %s are not written", shard.ErrNotMember, id, worker, holder, kind)
	}
	idx := c.commitLocked()
	if value == nil {
		delete(c.reports[kind], worker)
		return nil
	}
	c.reports[kind][worker] = &reportKey{value: value, session: id, index: idx}
	return nil
}

// fillReportsLocked sets m's Load and Standby from worker id's report
// keys, each while k's live session holds it, else to nil (a value
// written into the member key is never shown): copies, the caller may
// keep them.
func (c *Coordinator) fillReportsLocked(m *shard.MemberState, id string, k *memberKey) {
	m.Load, m.Standby = nil, nil
	live := func(kind reportKind) any {
		if r := c.reports[kind][id]; r != nil && r.session != "" && r.session == k.session {
			return r.value
		}
		return nil
	}
	if v, ok := live(reportLoads).(map[shard.ID]float64); ok {
		m.Load = maps.Clone(v)
	}
	if v, ok := live(reportStandby).(map[shard.ID]shard.StandbyState); ok {
		m.Standby = maps.Clone(v)
	}
}

// deleteReportsLocked deletes worker id's report keys; with deadOnly,
// only those no session holds.
func (c *Coordinator) deleteReportsLocked(id string, deadOnly bool) {
	for kind := range reportKinds {
		if r := c.reports[kind][id]; r != nil && (!deadOnly || r.session == "") {
			delete(c.reports[kind], id)
		}
	}
}

package worker

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// State is a worker's lifecycle state.
type State string

// Worker states, in order; after a loss the worker goes back to joining.
const (
	StateJoining  State = "joining"
	StateActive   State = "active"
	StateDraining State = "draining"
	StateStopped  State = "stopped"
)

// ClaimState is the state of this worker's claim on one shard (not to be
// confused with shard.ShardState, a shard lock key as the coordinator shows it).
type ClaimState string

// Shard states: acquiring → owned → revoking → released, or owned → lost.
// Released and lost shards are listed until their handler has returned.
const (
	ShardAcquiring ClaimState = "acquiring"
	ShardOwned     ClaimState = "owned"
	ShardRevoking  ClaimState = "revoking"
	ShardReleased  ClaimState = "released"
	ShardLost      ClaimState = "lost"
)

// Status is a read-only picture of a worker, published by its loop after
// every change. It is safe to keep: nothing in it is shared with the loop.
type Status struct {
	Worker string `json:"worker"`
	// Version is the release the worker shows (Config.Version); Protocol
	// the coordination protocol it speaks (shard.Protocol), and Steps its
	// protocol steps (shard.Steps).
	Version  string   `json:"version,omitempty"`
	Protocol int      `json:"protocol"`
	Steps    []string `json:"steps,omitempty"`
	State    State    `json:"state"`
	// Waiting says why the worker is not in the fleet while it joins or
	// rejoins (the coordinator unreachable, its ID held by another
	// session, …); empty once it is in.
	Waiting string          `json:"waiting,omitempty"`
	Session shard.SessionID `json:"session,omitempty"`
	// AssignorEpoch is the epoch of this worker's term as the fleet's
	// assignor while it holds the role, 0 otherwise.
	AssignorEpoch shard.Token   `json:"assignor_epoch,omitempty"`
	Shards        []ShardStatus `json:"shards"`
	// Standbys are the shards this worker runs a standby for (Standby),
	// sorted, each with its last report as of the Status call.
	Standbys []StandbyStatus `json:"standbys,omitempty"`

	standbys []*StandbyClaim // the published standbys, whose reports Status reads
}

// StandbyStatus is one standby on this worker.
type StandbyStatus struct {
	Shard  shard.ID       `json:"shard"`
	Report *StandbyReport `json:"report,omitempty"`
}

// ShardStatus is one shard's state on this worker.
type ShardStatus struct {
	Shard shard.ID    `json:"shard"`
	Token shard.Token `json:"token"`
	State ClaimState  `json:"state"`
	Since time.Time   `json:"since"`
	// Load is the shard's smoothed load as this worker measures it, when
	// Status was called, rounded to three significant digits as in the
	// loads key: what the handler reported (Claim.ReportLoad), or, for a
	// handler that never reported, its commit rate as the worker last
	// sampled it (it samples only while it carries loads: see
	// Config.LoadReportEvery). Nil, and left out of the JSON, while there
	// is no figure: a pointer because 0 is a figure (a handler that
	// reports 0, or commits nothing), and one field that is there or not
	// reads more plainly than a number beside a flag saying whether to
	// believe it.
	Load *float64 `json:"load,omitempty"`
}

// Owned returns the shards in state owned.
func (s Status) Owned() []shard.ID {
	var ids []shard.ID
	for _, sh := range s.Shards {
		if sh.State == ShardOwned {
			ids = append(ids, sh.Shard)
		}
	}
	return ids
}

// Status returns the worker's latest published status, with each shard's
// load as of now.
func (w *Worker) Status() Status {
	if s := w.status.Load(); s != nil {
		out := *s
		out.AssignorEpoch = w.assignor.Epoch() // the role changes without the loop
		out.Shards = withLoads(s.Shards, w.load.meters.peek(time.Now()))
		out.Standbys = nil
		for _, c := range s.standbys {
			out.Standbys = append(out.Standbys, StandbyStatus{Shard: c.Shard, Report: c.Last()})
		}
		return out
	}
	return Status{Worker: w.cfg.ID, Version: w.cfg.Version, Protocol: shard.Protocol, Steps: w.steps(), State: StateStopped}
}

// withLoads returns shards with their loads (the loads change without the
// loop), in a copy: the published list is shared by every caller.
func withLoads(shards []ShardStatus, loads map[shard.ID]float64) []ShardStatus {
	if len(loads) == 0 {
		return shards
	}
	out := slices.Clone(shards)
	for i := range out {
		if v, ok := loads[out[i].Shard]; ok {
			out[i].Load = &v
		}
	}
	return out
}

// peek returns the smoothed load of every running shard that has one, at
// now, rounded (roundLoad), changing no meter (meter.peek).
func (ms *meters) peek(now time.Time) map[shard.ID]float64 {
	return ms.collect(now, (*meter).peek)
}

// collect returns read(m, now) of every running shard's meter m that has
// a figure, rounded (roundLoad), for meters.sample (the loop's) and
// meters.peek (Status). It holds no meter's lock under the list's.
func (ms *meters) collect(now time.Time, read func(*meter, time.Time) (float64, bool)) map[shard.ID]float64 {
	ms.mu.Lock()
	list := maps.Clone(ms.all)
	ms.mu.Unlock()
	out := make(map[shard.ID]float64, len(list))
	for id, m := range list {
		if v, ok := read(m, now); ok {
			out[id] = roundLoad(v)
		}
	}
	return out
}

// peek returns the smoothed load at now and whether there is one, for a
// reader other than the loop. Unlike sample it changes nothing: sample
// closes the commit-counting window of a handler that never reported,
// and a status read that did so would cut the loop's windows short and
// turn its figure into noise. So such a handler's figure is the one the
// loop last sampled.
func (m *meter) peek(now time.Time) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.known || !m.reported {
		return m.smoothed, m.known
	}
	return m.smoothedAt(now), true
}

// publish replaces the published status. Only the loop calls it.
func (w *Worker) publish(state State, session shard.SessionID, runners map[shard.ID]*runner, standbys map[shard.ID]*standbyRunner) {
	s := &Status{Worker: w.cfg.ID, Version: w.cfg.Version, Protocol: shard.Protocol, Steps: w.steps(), State: state, Session: session, Shards: make([]ShardStatus, 0, len(runners))}
	if why := w.waiting.Load(); why != nil && state != StateStopped {
		s.Waiting = *why
	}
	owned := 0
	for id, r := range runners {
		s.Shards = append(s.Shards, ShardStatus{Shard: id, Token: r.claim.Token, State: r.state, Since: r.since})
		if r.state == ShardOwned || r.state == ShardRevoking {
			owned++
		}
	}
	sort.Slice(s.Shards, func(i, j int) bool { return s.Shards[i].Shard < s.Shards[j].Shard })
	for _, r := range standbys {
		s.standbys = append(s.standbys, r.claim)
	}
	slices.SortFunc(s.standbys, func(a, b *StandbyClaim) int { return cmp.Compare(a.Shard, b.Shard) })
	w.m.shardsOwned.Set(float64(owned))
	w.m.standbys.Set(float64(len(standbys)))
	w.status.Store(s)
}

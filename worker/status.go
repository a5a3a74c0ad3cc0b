package worker

import (
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
	Worker  string          `json:"worker"`
	State   State           `json:"state"`
	Session shard.SessionID `json:"session,omitempty"`
	// AssignorEpoch is the epoch of this worker's term as the fleet's
	// assignor while it holds the role, 0 otherwise.
	AssignorEpoch shard.Token   `json:"assignor_epoch,omitempty"`
	Shards        []ShardStatus `json:"shards"`
}

// ShardStatus is one shard's state on this worker.
type ShardStatus struct {
	Shard shard.ID    `json:"shard"`
	Token shard.Token `json:"token"`
	State ClaimState  `json:"state"`
	Since time.Time   `json:"since"`
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

// Status returns the worker's latest published status.
func (w *Worker) Status() Status {
	if s := w.status.Load(); s != nil {
		out := *s
		out.AssignorEpoch = shard.Token(w.leading.Load()) // the role changes without the loop
		return out
	}
	return Status{Worker: w.cfg.ID, State: StateStopped}
}

// publish replaces the published status. Only the loop calls it.
func (w *Worker) publish(state State, session shard.SessionID, runners map[shard.ID]*runner) {
	s := &Status{Worker: w.cfg.ID, State: state, Session: session, Shards: make([]ShardStatus, 0, len(runners))}
	owned := 0
	for id, r := range runners {
		s.Shards = append(s.Shards, ShardStatus{Shard: id, Token: r.claim.Token, State: r.state, Since: r.since})
		if r.state == ShardOwned || r.state == ShardRevoking {
			owned++
		}
	}
	sort.Slice(s.Shards, func(i, j int) bool { return s.Shards[i].Shard < s.Shards[j].Shard })
	w.m.shardsOwned.Set(float64(owned))
	w.status.Store(s)
}

package fleetview

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/shardlease/shardlease/assignor"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// Shard states.
const (
	ShardOwned    = "owned"    // held by a live member's session
	ShardFree     = "free"     // no session holds the key (or it never existed)
	ShardOrphaned = "orphaned" // held by a session whose member key is gone or dead
)

// Worker states.
const (
	WorkerLive     = "live"
	WorkerDraining = "draining" // live, asked by an operator to hand off every shard
	WorkerDead     = "dead"     // member key without a session
)

// Fleet is the operator's view of one fleet at one coordinator index. It is
// what /api/v1/fleet and shardctl status --json return.
type Fleet struct {
	// Name is the fleet's name as the operator knows it (the KV prefix, or
	// "embedded" for the demo).
	Name  string    `json:"name"`
	Index uint64    `json:"index"`
	At    time.Time `json:"at"`
	// Config is nil when nothing was found at the prefix: no fleet.
	Config *shard.Config `json:"config"`
	// Assignor is the worker holding P/assignor, if any.
	Assignor Assignor `json:"assignor"`
	// Freeze is the fleet-wide freeze (shardctl freeze): who set it, when
	// and why; nil when the fleet is not frozen. While it is set the
	// assignor starts no hand-off between live workers.
	Freeze *shard.Mark `json:"freeze,omitempty"`
	// Policy is the fleet's stored balance policy (shardctl balance); nil
	// while none is stored.
	Policy  *shard.BalancePolicy `json:"policy,omitempty"`
	Summary Summary              `json:"summary"`
	// Queue is the move queue: hand-offs in flight against the budget,
	// and those waiting.
	Queue Queue `json:"queue"`
	// Load is the fleet's load as its members carry it; nil when none
	// carries any (a fleet that balances shard counts).
	Load    *Load    `json:"load,omitempty"`
	Workers []Worker `json:"workers"`
	// Reshard is the reshard in progress: parents closing and closed,
	// children open and waiting; nil when none runs.
	Reshard *shard.ReshardProgress `json:"reshard,omitempty"`
	// Versions counts the live workers by the release and protocol they
	// run, sorted by release: more than one is a mixed fleet (a roll in
	// progress, or one that stopped halfway).
	Versions []Version `json:"versions"`
	// StepsWaiting are the protocol steps some live workers do not speak.
	StepsWaiting []StepWait `json:"steps_waiting,omitempty"`
	// Unplaceable are the shards the placement rules let no live worker
	// be given (sorted), as the assignor's own step decides on this
	// listing: unowned, and reported rather than placed elsewhere.
	Unplaceable []shard.ID `json:"unplaceable,omitempty"`
	// Zones are the live workers' zones, by name, when any has one (see
	// zones.go): what each holds against its capacity's share.
	Zones  []Zone  `json:"zones,omitempty"`
	Shards []Shard `json:"shards"`
	// Events are the recent ownership and membership changes, newest first.
	Events []Event `json:"events"`
	// HasOffsets is true when an offset store was read: Shard.Offset and
	// Floor are meaningful; Shard.Lag too when the stream head is known.
	HasOffsets bool `json:"has_offsets"`
	// HistoryBehind lists the held shards whose token is below the
	// offsets store's floor (HasOffsets): their fences are refused, and
	// the coordinator's history is older than the store's (rebuilt empty,
	// restored from an older snapshot; `shardctl recover`).
	HistoryBehind []shard.ID `json:"history_behind,omitempty"`
	Problems      []string   `json:"problems,omitempty"`
	// Error is the last error reading the fleet, when the view is stale
	// (the dashboard keeps showing the last good view).
	Error string `json:"error,omitempty"`
}

// Summary is the fleet at a glance.
type Summary struct {
	Shards   int `json:"shards"`
	Owned    int `json:"owned"`
	Free     int `json:"free"`
	Orphaned int `json:"orphaned"`
	Live     int `json:"workers_live"`
	Draining int `json:"workers_draining"`
	Dead     int `json:"workers_dead"`
	// Cordoned counts the live workers an operator cordoned; Returning
	// the workers inside their rejoin grace (see Worker.Returning).
	Cordoned  int `json:"workers_cordoned"`
	Returning int `json:"workers_returning"`
	// Imbalance is max − min shards owned over the live workers that are
	// not draining (over all live workers if every one drains): 0 or 1
	// once a fleet of equal weights has settled.
	Imbalance int `json:"imbalance"`
	// PendingMoves is how many shards are not yet where the assignor put
	// them: HandOffs plus Placements. It is read from the assignment keys,
	// not planned again: the assignor alone decides.
	PendingMoves int `json:"pending_moves"`
	// HandOffs are shards held by a live worker whose assignment key no
	// longer lists them (hand-offs in flight). A worker with no readable
	// key is not counted: it keeps what it runs until the key is written.
	HandOffs int `json:"handoffs_pending"`
	// Placements are free shards an assignment key lists that nobody has
	// taken yet.
	Placements int `json:"placements_pending"`
	// MaxLag is the largest Shard.Lag, when lags are known.
	MaxLag *int64 `json:"max_lag,omitempty"`
}

// Assignor is the holder of P/assignor: the one worker that lists the
// fleet and writes every worker's assignment key.
type Assignor struct {
	// Held is false while no session holds the lock (between two
	// assignors, or before the first): nobody is assigning.
	Held    bool            `json:"held"`
	Worker  string          `json:"worker,omitempty"`
	Session shard.SessionID `json:"session,omitempty"`
	// Epoch is the holder's epoch (the acquiring write's index); the
	// assignment keys it wrote carry it.
	Epoch shard.Token `json:"epoch,omitempty"`
	Since time.Time   `json:"since,omitzero"`
	// Problem says why the key's value cannot be read (Worker is empty
	// then, though the lock is held).
	Problem string `json:"problem,omitempty"`
}

// Version is one release and protocol among a fleet's live workers.
type Version struct {
	Release  string `json:"release"` // Member.Version; "unknown" when a worker wrote none
	Protocol int    `json:"protocol"`
	Workers  int    `json:"workers"`
}

// Mixed reports whether the live workers run more than one release or
// protocol.
func (f Fleet) Mixed() bool { return len(f.Versions) > 1 }

// Worker is one member of the fleet.
type Worker struct {
	ID       string          `json:"id"`
	State    string          `json:"state"` // live, draining, dead
	Shards   int             `json:"shards"`
	Session  shard.SessionID `json:"session,omitempty"`
	Version  string          `json:"version,omitempty"`
	Protocol int             `json:"protocol,omitempty"` // the protocol it speaks (shard.Member.Speaks)
	Steps    []string        `json:"steps,omitempty"`    // the protocol steps it speaks (shard.Member.Steps)
	Address  string          `json:"address,omitempty"`
	Weight   int             `json:"weight"`
	Started  time.Time       `json:"started,omitzero"`
	Draining bool            `json:"draining,omitempty"`
	// Zone and Labels are the worker's failure domain and facts, as its
	// member key says (shard.Member.Zone, Labels).
	Zone   string            `json:"zone,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// Assigned is how many shards its assignment key gives it (0 with no
	// key); Shards is how many it owns. They differ while it takes or
	// hands off shards, or when it is stuck. AssignedSince is when the
	// assignor last changed its set; AssignedEpoch the epoch that wrote it.
	Assigned      int         `json:"assigned"`
	AssignedSince time.Time   `json:"assigned_since,omitzero"`
	AssignedEpoch shard.Token `json:"assigned_epoch,omitempty"`
	// Stuck is set while the assignor judges this worker's current
	// session stuck (given free shards it did not take): it is given
	// nothing until the verdict ends or it has a new session. Probation is
	// set after a verdict ended until the worker takes a shard it is given:
	// it may be given one more than it holds. Marks about an earlier
	// session are not shown.
	Stuck     bool `json:"stuck,omitempty"`
	Probation bool `json:"probation,omitempty"`
	// Cordon is set while an operator has cordoned the worker (shardctl
	// cordon): who, when and why. A cordoned worker keeps what it holds
	// and is given nothing new.
	Cordon *shard.Mark `json:"cordon,omitempty"`
	// RejoinUntil is when the rejoin grace the worker announced as it
	// stopped ends; Returning is true while the view's time is before it:
	// a dead worker then is restarting, and its shards are reserved for it
	// (idle) until RejoinUntil.
	RejoinUntil time.Time `json:"rejoin_until,omitzero"`
	Returning   bool      `json:"returning,omitempty"`
	// Load is the sum of the loads of the shards it owns (an owned shard
	// without a figure counts as the mean), and LoadRatio its load per
	// unit of capacity over the fleet's mean (1: exactly its share; nil
	// without capacity). Both nil when the fleet carries no loads.
	Load      *float64 `json:"load,omitempty"`
	LoadRatio *float64 `json:"load_ratio,omitempty"`
}

// Live reports whether the worker's member key is held by a session.
func (w Worker) Live() bool { return w.State != WorkerDead }

// Shard is one shard of the fleet.
type Shard struct {
	ID    shard.ID `json:"id"`
	State string   `json:"state"` // owned, free, orphaned
	// Owner is the live worker holding the shard; for a free or orphaned
	// shard, the worker that held it last (from the key's value).
	Owner   string          `json:"owner,omitempty"`
	Session shard.SessionID `json:"session,omitempty"`
	// Token is the key's current fencing token (0: never acquired).
	Token shard.Token `json:"token"`
	// Since is when the owner acquired it (written by the acquirer).
	Since time.Time `json:"since,omitzero"`
	// Reason is the acquisition reason the owner wrote; Released the
	// reason of a voluntary release since; Why says in one phrase why the
	// shard last moved, whichever applies.
	Reason   string `json:"reason,omitempty"`
	Released string `json:"released,omitempty"`
	Why      string `json:"why"`
	// Assigned is the worker whose assignment key lists it (protocol 2):
	// the assignor's decision, where the shard goes or stays.
	Assigned string `json:"assigned,omitempty"`
	// Offset and Floor come from the offset store (HasOffsets); Lag is the
	// stream head minus Offset when the head is known.
	Offset *int64       `json:"offset,omitempty"`
	Floor  *shard.Token `json:"floor,omitempty"`
	Lag    *int64       `json:"lag,omitempty"`
	// Load is the owned shard's smoothed load as its owner last reported
	// it (its loads key, Member.Load); nil when not known.
	Load *float64 `json:"load,omitempty"`
}

// Input is everything Build needs.
type Input struct {
	Name     string
	Snapshot shard.Snapshot
	// Offsets are the store's checkpoints by shard; nil means no store is
	// configured (a shard missing from a non-nil map has the zero
	// checkpoint).
	Offsets map[shard.ID]offsets.Checkpoint
	// Heads are the streams' newest offsets by shard, for lag; nil means
	// unknown.
	Heads map[shard.ID]int64
	// Events are the recent changes (from a Tracker); nil shows the latest
	// acquisitions recorded in the snapshot's keys instead (LatestAcquired).
	Events []Event
	// MaxMovesInFlight and Tolerance, when not zero, are shown instead of
	// the fleet's balance policy (a what-if: the queue against another
	// move budget, the loads against another band): the move budget as
	// Queue.Budget, the imbalance tolerance as Load.Tolerance.
	MaxMovesInFlight int
	Tolerance        float64
	Now              time.Time
}

// Build returns the fleet view of in. It is pure and never fails.
func Build(in Input) Fleet {
	s := in.Snapshot
	f := Fleet{Name: in.Name, Index: s.Index, At: in.Now, Config: s.Config, Problems: s.Problems,
		Workers: []Worker{}, Shards: []Shard{}, Events: in.Events, HasOffsets: in.Offsets != nil,
		Assignor: assignorView(s.Assignor), Freeze: s.Freeze}
	if f.Events == nil {
		f.Events = LatestAcquired(s, 20)
	}
	if rp, ok := s.Reshard(); ok {
		f.Reshard = &rp
	}

	bySession := map[shard.SessionID]int{} // live session → index in f.Workers
	for _, m := range s.Members {
		w := Worker{ID: m.ID, Session: m.Session, Version: m.Version, Protocol: m.Speaks(), Steps: m.Steps, Address: m.Address, Weight: m.Weight,
			Started: m.Started, Draining: m.Draining, State: WorkerDead, Zone: m.Zone, Labels: maps.Clone(m.Labels),
			Cordon: m.Cordon, RejoinUntil: m.RejoinUntil, Returning: m.Returning(in.Now)}
		if a, ok := s.Assignments[m.ID]; ok {
			mem, _ := assignor.Remembered(a)
			w.Assigned, w.AssignedSince, w.AssignedEpoch = len(a.Shards), mem.Since, a.Epoch
			// The assignor's own rule (rebalance: judge): a verdict counts
			// only for the session it names.
			current := m.Live() && mem.StuckSession == m.Session
			w.Stuck, w.Probation = mem.Stuck && current, !mem.Stuck && mem.Verdicts > 0 && current
		}
		if m.Live() {
			w.State = WorkerLive
			if m.Draining {
				w.State = WorkerDraining
			}
			bySession[m.Session] = len(f.Workers)
		}
		f.Workers = append(f.Workers, w)
	}
	f.Versions = versions(f.Workers)
	f.StepsWaiting = stepsWaiting(f.Workers)

	keys := make(map[shard.ID]shard.ShardState, len(s.Shards))
	for _, st := range s.Shards {
		keys[st.Shard] = st
	}
	var ids []shard.ID
	if s.Config != nil {
		ids = s.Config.IDs()
	} else {
		for _, st := range s.Shards {
			ids = append(ids, st.Shard)
		}
	}

	// A shard in two keys (edited by hand) shows under the first worker
	// by ID, so that Build stays deterministic.
	assignedTo := map[shard.ID]string{}
	listed := map[listing]bool{}
	for _, wid := range slices.Sorted(maps.Keys(s.Assignments)) {
		for _, id := range s.Assignments[wid].Shards {
			listed[listing{wid, id}] = true
			if _, dup := assignedTo[id]; !dup {
				assignedTo[id] = wid
			}
		}
	}
	liveIDs := make(map[string]struct{}, len(bySession))
	for _, i := range bySession {
		liveIDs[f.Workers[i].ID] = struct{}{}
	}
	for _, id := range ids {
		st := keys[id]
		sh := Shard{ID: id, Session: st.Session, Token: st.Token, Since: st.Owner.Since, Reason: st.Owner.Why.String(),
			Released: released(st.Owner), Owner: st.Owner.Worker, State: ShardFree, Assigned: assignedTo[id]}
		switch i, live := bySession[st.Session]; {
		case st.Held() && live:
			sh.State, sh.Owner = ShardOwned, f.Workers[i].ID
			f.Workers[i].Shards++
			if _, keyed := s.Assignments[sh.Owner]; keyed && !listed[listing{sh.Owner, id}] {
				f.Summary.HandOffs++
			}
		case st.Held():
			sh.State = ShardOrphaned
		}
		// A placement is pending for a shard no live worker holds that the
		// assignor gave to a live one: free, or still locked by a dead
		// session for its lock-delay. (A key of a dead worker is not the
		// assignor's decision: it deletes such keys.)
		if _, live := liveIDs[sh.Assigned]; sh.State != ShardOwned && live {
			f.Summary.Placements++
		}
		sh.Why = why(st, sh.State)
		if in.Offsets != nil {
			cp := in.Offsets[id]
			sh.Offset, sh.Floor = &cp.Offset, &cp.Floor
			if sh.State != ShardFree && sh.Token < cp.Floor {
				f.HistoryBehind = append(f.HistoryBehind, id)
			}
			if head, ok := in.Heads[id]; ok {
				lag := max(head-cp.Offset, 0)
				sh.Lag = &lag
			}
		}
		f.Shards = append(f.Shards, sh)
	}

	// What the assignor would decide now, by its own code: the queue of
	// moves and, with loads, the band.
	loads := s.ShardLoads()
	var fallback shard.BalancePolicy // nothing stored: balancing load if loads are carried
	if len(loads) > 0 {
		fallback.Load = &shard.LoadBalance{}
	}
	pol := assignor.Following(s, fallback)
	if s.Policy != nil {
		f.Policy = &pol
	}
	plan, err := assignor.Plan(s, pol, in.Now)
	if err != nil {
		plan = rebalance.Decision{}
	}
	band := plan.Band
	if shown := loadPolicy(pol, len(loads) > 0, in.Tolerance); shown != nil && (pol.Load == nil || *shown != *pol.Load) {
		// Loads carried in a fleet that balances counts, or shown against
		// another band: the band as the assignor would judge it then.
		p := pol.Clone()
		p.Load = shown
		if lp, err := assignor.Plan(s, p, in.Now); err == nil {
			band = lp.Band
		}
	}
	f.Unplaceable = plan.Unplaceable
	f.Load = buildLoad(&f, loads, band)
	f.Zones = zones(f.Workers, len(ids))
	f.Summary = summarize(f)
	f.Queue = Queue{InFlight: f.Summary.HandOffs, Budget: budget(s, pol, in.MaxMovesInFlight, len(ids), len(bySession)), Queued: handOffs(plan)}
	return f
}

// loadPolicy is the load balancing the view judges loads by: the
// policy's, or, when the fleet balances counts but its workers carry
// loads, the default; its tolerance replaced by tolerance when that is
// not zero. Nil when there is nothing to judge.
func loadPolicy(pol shard.BalancePolicy, carried bool, tolerance float64) *shard.LoadBalance {
	var l shard.LoadBalance
	switch {
	case pol.Load != nil:
		l = *pol.Load
	case !carried:
		return nil
	}
	if tolerance != 0 {
		l.Tolerance = tolerance
	}
	return &l
}

// budget is the move budget to show the queue against: asked (a
// what-if), or the policy's MaxMovesInFlight, or, when the fleet's
// stored policy leaves it to the default, the default for the fleet's
// size; 0 (not shown) when nothing is stored or asked.
func budget(s shard.Snapshot, pol shard.BalancePolicy, asked, shards, live int) int {
	switch {
	case asked > 0:
		return asked
	case pol.MaxMovesInFlight > 0:
		return pol.MaxMovesInFlight
	case s.Policy != nil:
		return rebalance.DefaultMaxMovesInFlight(shards, live)
	}
	return 0
}

// listing is one shard in one worker's assignment key.
type listing struct {
	worker string
	shard  shard.ID
}

// assignorView is the fleet's view of P/assignor.
func assignorView(k shard.LockKey) Assignor {
	if !k.Held() {
		return Assignor{Problem: k.Problem}
	}
	return Assignor{Held: true, Worker: k.Worker, Session: k.Session, Epoch: k.Token, Since: k.Since, Problem: k.Problem}
}

func summarize(f Fleet) Summary {
	sum := Summary{Shards: len(f.Shards), HandOffs: f.Summary.HandOffs, Placements: f.Summary.Placements,
		PendingMoves: f.Summary.HandOffs + f.Summary.Placements}
	for _, s := range f.Shards {
		switch s.State {
		case ShardOwned:
			sum.Owned++
		case ShardOrphaned:
			sum.Orphaned++
		default:
			sum.Free++
		}
		if s.Lag != nil && (sum.MaxLag == nil || *s.Lag > *sum.MaxLag) {
			lag := *s.Lag
			sum.MaxLag = &lag
		}
	}
	active, live := map[string]int{}, map[string]int{}
	for _, w := range f.Workers {
		if w.Returning {
			sum.Returning++
		}
		if w.Cordon != nil && w.Live() {
			sum.Cordoned++
		}
		switch w.State {
		case WorkerDead:
			sum.Dead++
			continue
		case WorkerDraining:
			sum.Draining++
		default:
			active[w.ID] = w.Shards
		}
		sum.Live++
		live[w.ID] = w.Shards
	}
	if len(active) == 0 {
		active = live
	}
	sum.Imbalance = rebalance.Spread(active)
	return sum
}

// why says in one phrase why a shard last moved.
func why(st shard.ShardState, state string) string {
	o := st.Owner
	switch {
	case st.Token == 0 && o.Worker == "":
		return "never owned"
	case state == ShardOwned && o.Reason != shard.ReasonUnknown:
		return o.Why.String()
	case state == ShardOwned:
		return "acquired by " + o.Worker
	case state == ShardOrphaned:
		return fmt.Sprintf("held by session %s, whose worker %s is gone", st.Session, o.Worker)
	case o.Released != shard.ReasonUnknown:
		return fmt.Sprintf("released by %s: %s", o.Worker, o.Released)
	default:
		return fmt.Sprintf("%s's session ended (crash, or a pause past the TTL)", o.Worker)
	}
}

// released is the reason the lock's last owner released it, "" while it
// holds it or when its session ended instead.
func released(o shard.Owner) string {
	if o.Released == shard.ReasonUnknown {
		return ""
	}
	return o.Released.String()
}

// Exists reports whether a fleet was found (its config key exists).
func (f Fleet) Exists() bool { return f.Config != nil }

// Worker returns the worker with the given ID.
func (f Fleet) Worker(id string) (Worker, bool) {
	i, ok := slices.BinarySearchFunc(f.Workers, id, func(w Worker, id string) int {
		switch {
		case w.ID < id:
			return -1
		case w.ID > id:
			return 1
		}
		return 0
	})
	if !ok {
		return Worker{}, false
	}
	return f.Workers[i], true
}

// Shard returns the shard with the given ID.
func (f Fleet) Shard(id shard.ID) (Shard, bool) {
	for _, s := range f.Shards {
		if s.ID == id {
			return s, true
		}
	}
	return Shard{}, false
}

// WorkerIDs lists the workers' IDs, for error messages.
func (f Fleet) WorkerIDs() []string {
	ids := make([]string, len(f.Workers))
	for i, w := range f.Workers {
		ids[i] = w.ID
	}
	return ids
}

// StepWait is a protocol step some live workers do not speak: what needs
// it waits for them (docs/design.md, "Compatibility").
type StepWait struct {
	Step string `json:"step"`
	// Workers are the live workers without it, each as "ID (release)".
	Workers []string `json:"workers"`
}

// stepsWaiting lists, for each step this build speaks, the live workers
// that do not speak it.
func stepsWaiting(ws []Worker) []StepWait {
	var out []StepWait
	for _, step := range shard.Steps() {
		var lacking []string
		for _, w := range ws {
			if w.State != WorkerDead && !slices.Contains(w.Steps, step) {
				lacking = append(lacking, fmt.Sprintf("%s (%s)", w.ID, cmp.Or(w.Version, "release unknown")))
			}
		}
		if len(lacking) > 0 {
			out = append(out, StepWait{Step: step, Workers: lacking})
		}
	}
	return out
}

// versions counts the live workers by release and protocol.
func versions(ws []Worker) []Version {
	count := map[Version]int{}
	for _, w := range ws {
		if w.State == WorkerDead {
			continue
		}
		count[Version{Release: cmp.Or(w.Version, "unknown"), Protocol: w.Protocol}]++
	}
	out := []Version{}
	for v, n := range count {
		v.Workers = n
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Version) int {
		return cmp.Or(cmp.Compare(a.Release, b.Release), cmp.Compare(a.Protocol, b.Protocol))
	})
	return out
}

package assignor

import (
	"fmt"
	"time"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
)

// MaxRejoinGrace is the longest rejoin grace the assignor honours: a
// member's RejoinUntil further ahead than this (plus a minute for clocks
// that differ) is ignored, so a member key edited by hand cannot keep a
// worker's shards idle for ever.
const MaxRejoinGrace = 10 * time.Minute

// State is the assignor's input to rebalance.Step from one listing: the
// live members and who holds what, derived by session, never by the name
// in a lock's value (a lock still held by a member's previous session is
// not the member's); each worker's key with the assignor's memory about
// it; the operators' marks. Keys that are not the assignor's word (a
// problem in the snapshot, shard.Unsealed included) are left out, so the
// step treats their workers as without a key and writes one. It returns
// what it could not read of the memories, for the log. Members' zones
// count only while every live member speaks shard.StepZones (the policy's
// placement rules, which Rules passes, only while every one speaks
// shard.StepRules). shards must be sorted, as a Config's IDs are.
func State(snap shard.Snapshot, cfg shard.Config, shards []shard.ID, now time.Time) (rebalance.State, []string) {
	cfg.Generation = generation(snap)
	st := rebalance.State{Now: now, Shards: shards, Holders: make([]string, len(shards)), Assigned: map[string]rebalance.Assignment{},
		Frozen: snap.Freeze != nil}
	bySession := map[shard.SessionID]string{}
	// Zones count once every live member speaks of them: until then an
	// assignor of the release before them could take over and plan
	// without them.
	zoned := snap.AllSpeak(shard.StepZones)
	// Standbys too: an assignor of the release before them writes keys
	// without them.
	standbys := snap.AllSpeak(shard.StepStandbys)
	// While a reshard runs, a member that cannot close shards (it lacks
	// the step: it joined after the reshard began) is given nothing, as if
	// cordoned: a parent placed on it would never close.
	resharding := cfg.Resharding()
	for _, m := range snap.Members {
		if m.Returning(now) && m.RejoinUntil.Sub(now) <= MaxRejoinGrace+time.Minute {
			if st.Returning == nil {
				st.Returning = map[string]time.Time{}
			}
			st.Returning[m.ID] = m.RejoinUntil
		}
		if m.Live() {
			rm := rebalance.Member{ID: m.ID, Weight: m.Weight, Draining: m.Draining, Session: m.Session,
				Cordoned: m.Cordon != nil || resharding && !m.HasStep(shard.StepReshard)}
			if zoned {
				rm.Zone = m.Zone
			}
			rm.Labels = m.Labels
			if standbys && m.StandbyCapable {
				rm.Standby, rm.Standbys = true, m.Standby
			}
			st.Members = append(st.Members, rm)
			bySession[m.Session] = m.ID
		}
	}
	// snap.Shards is sorted by ID, as shards is: one merge lines the locks
	// up with shards (a lock of a shard outside them is skipped).
	i := 0
	for _, s := range snap.Shards {
		for i < len(shards) && shards[i] < s.Shard {
			i++
		}
		if i == len(shards) {
			break
		}
		if id, ok := bySession[s.Session]; ok && s.Held() && s.Shard == shards[i] {
			st.Holders[i] = id
		}
	}
	var problems []string
	for id, k := range snap.Assignments {
		a := rebalance.Assignment{Shards: k.Shards, Free: k.Free, Standby: k.Standby}
		if err := decodeMemory(cfg, k.Memory, &a); err != nil {
			problems = append(problems, fmt.Sprintf("assign/%s: %v; the worker is judged afresh", id, err))
		}
		st.Assigned[id] = a
	}
	return st, problems
}

// Rules are the placement rules the assignor follows on snap under policy
// p: p's, while every live member speaks shard.StepRules (an assignor of
// release 0.1.0, which a member without the step could become, would
// follow none), else none.
func Rules(snap shard.Snapshot, p shard.BalancePolicy) []shard.PlacementRule {
	if !snap.AllSpeak(shard.StepRules) {
		return nil
	}
	return p.Rules
}

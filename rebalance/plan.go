package rebalance

import (
	"maps"
	"slices"

	"github.com/shardlease/shardlease/shard"
)

// Member is a live member of the fleet as the planner sees it.
type Member struct {
	ID string
	// Weight is the member's relative share of shards; ≤ 0 counts as 1.
	Weight int
	// Draining gives the member a quota of 0, so its shards move elsewhere.
	// If every member drains, draining is ignored: shards must go somewhere.
	Draining bool
	// Cordoned (Step only; Compute ignores it): the member keeps the shards
	// it holds and is given none it does not hold. Its quota is what it
	// holds (none when it also drains); the members not cordoned share the
	// rest by weight. If every member is cordoned, cordons are ignored:
	// shards must go somewhere.
	Cordoned bool
	// Session is the member's current session. Step uses it to tell a
	// restarted member from the one it judged stuck; Compute ignores it.
	Session shard.SessionID
}

// Input is one snapshot of a fleet. Compute does not modify it.
type Input struct {
	// Shards is the fleet's shard set.
	Shards []shard.ID
	// Members are the live members only.
	Members []Member
	// Owners maps each held shard to its current holder. A holder that is
	// not in Members is dead, so its shard is free; entries for shards not in
	// Shards are ignored.
	Owners map[shard.ID]string
}

// Move is one shard whose target differs from its current live holder.
// From is "" when the shard is free (unheld, or held by a dead member): To
// acquires it. Otherwise From releases it first and To acquires it after.
type Move struct {
	Shard    shard.ID
	From, To string
}

// Plan is the planner's answer for one snapshot.
type Plan struct {
	// Target maps every shard to exactly one live member; it is empty when
	// there are no members.
	Target map[shard.ID]string
	// Capacity is each member's quota; the quotas sum to the shard count
	// (when there is at least one member).
	Capacity map[string]int
	// Moves lists every shard whose target differs from its current live
	// holder, sorted by shard.
	Moves []Move
}

// Compute plans the fleet's assignment for one snapshot. It is pure and
// deterministic: see the package doc for what the plan guarantees. The only
// error wraps ErrInvalidInput.
func Compute(in Input) (Plan, error) {
	members, shards, err := normalize(in)
	if err != nil {
		return Plan{}, err
	}
	plan := Plan{
		Target:   make(map[shard.ID]string, len(shards)),
		Capacity: make(map[string]int, len(members)),
	}
	if len(members) == 0 {
		return plan, nil
	}

	ids := make([]string, len(members))
	index := make(map[string]int, len(members))
	for m, mem := range members {
		ids[m] = mem.ID
		index[mem.ID] = m
	}
	owner := make([]int, len(shards))
	owned := make([]int, len(members))
	for i, s := range shards {
		owner[i] = -1
		// "" is never a member ID, so an empty holder is free as well.
		if m, live := index[in.Owners[s]]; live {
			owner[i] = m
			owned[m]++
		}
	}

	caps := capacities(len(shards), ids, effectiveWeights(members), owned)
	target := assign(shards, ids, owner, caps)

	for m, c := range caps {
		plan.Capacity[ids[m]] = c
	}
	for i, s := range shards {
		to := ids[target[i]]
		plan.Target[s] = to
		if o := owner[i]; o != target[i] {
			from := ""
			if o >= 0 {
				from = ids[o]
			}
			plan.Moves = append(plan.Moves, Move{Shard: s, From: from, To: to})
		}
	}
	return plan, nil
}

// For returns what worker should do now, both lists sorted: acquire the free
// shards targeted to it, and release the shards it holds that are targeted
// elsewhere. A shard targeted to worker but still held by a live member is in
// neither list: worker takes it once its holder has released it.
func (p Plan) For(worker string) (acquire, release []shard.ID) {
	for _, mv := range p.Moves {
		switch {
		case mv.From == "" && mv.To == worker:
			acquire = append(acquire, mv.Shard)
		case mv.From == worker:
			release = append(release, mv.Shard)
		}
	}
	return acquire, release
}

// Counts returns the number of shards targeted to each member, including
// members that get none.
func (p Plan) Counts() map[string]int {
	counts := make(map[string]int, len(p.Capacity))
	for m := range p.Capacity {
		counts[m] = 0
	}
	for _, m := range p.Target {
		counts[m]++
	}
	return counts
}

// Spread returns max − min over the counts, 0 for an empty map: the
// imbalance of an assignment (at most 1 for a plan with equal weights).
func Spread(counts map[string]int) int {
	if len(counts) == 0 {
		return 0
	}
	vs := slices.Collect(maps.Values(counts))
	return slices.Max(vs) - slices.Min(vs)
}

// Package rebalance decides who should own which shard: Step, a pure
// function that does no I/O and reads no clock, randomness or environment.
//
// The fleet's one elected assignor (package assignor) reads the members,
// the shard locks and every worker's assignment key, and calls Step. Step
// takes everything the assignor read (State: the time, the shard set, the
// live members with their weights and sessions, the live holder of each
// lock, and every assignment key, including those of workers gone) and
// returns the keys to write and to delete, the moves it made (for logs and
// metrics) and when to step again if nothing changes. The assignor keeps
// nothing else: what Step must remember (when a key changed, how long its
// worker has been waiting, a stuck mark) is in the keys, so a new assignor
// carries on from the coordinator alone. Each worker reads only its own
// key, takes the free shards it lists and releases the shards it holds that
// it does not list.
//
// # What a Decision guarantees
//
// For the keys as they are once the Decision is written:
//
//   - Coverage: no shard is in two workers' keys, and every free shard is
//     in one at once (one writer: there is no herd to pace), so it has
//     exactly one designated taker, unless every live member is stuck or on
//     probation. The key of a worker that is not live is deleted, unless it
//     is returning.
//   - Two-step moves: a shard held by a live member is in no key but its
//     holder's. A hand-off takes it out of the holder's key; it goes into
//     another key only once the holder has released it. Nobody is told to
//     take a lock that is held.
//   - Quotas by weight: the quotas sum to the shard count N and follow the
//     weights by the largest-remainder method: a member's quota is
//     ⌊N·w/Σw⌋ or ⌈N·w/Σw⌉, so at rest with equal weights and nobody stuck
//     counts differ by at most one. A weight ≤ 0 counts as 1 and one above
//     2^32 as 2^32 (so that the arithmetic cannot overflow). A draining
//     member's quota is 0, unless every member drains (shards must go
//     somewhere). The rounding slots (the "+1"s) go first to members that
//     would otherwise have to give up a shard. Stuck and cordoned members
//     have the quotas their rules below give them; the others share the
//     rest in the same way.
//   - Stickiness: a holder keeps min(held, quota) of what it holds; one
//     over its quota keeps its highest-scoring shards (rendezvous: the
//     xxhash of the shard ID, a zero byte and the member ID) and hands off
//     the rest. A shard assigned and not yet taken counts for its assignee,
//     so it stays there unless the assignee is over its quota. From rest
//     with equal weights and nobody stuck, a join moves ⌊N/(W+1)⌋ or
//     ⌈N/(W+1)⌉ shards, all to the joiner, and a leave moves exactly the
//     leaver's shards.
//   - Pacing: hand-offs in flight (held, but not in the holder's key) are
//     counted from the state, and a new one starts only while fewer than
//     Policy.MaxMovesInFlight are; drains start first. Placements of free
//     shards are not counted: a crashed worker's shards are placed at once.
//   - Stuck workers: a worker whose key lists free shards and that took none
//     of them for Policy.StuckAfter is marked stuck under its session. Its
//     free shards go elsewhere, once per verdict; while the verdict lasts it
//     is given nothing new and keeps at most ⌈its weighted share⌉ of what
//     it holds; the others share the rest. A verdict lasts
//     StuckAfter·2^k (the session's k-th, k at most 6), then the worker is
//     on probation: its quota is min(held+1, ⌈its weighted share⌉), in
//     load balance it is given the lightest free shard when one is free
//     (and nothing while none is: a calm load-balanced fleet tests it at
//     its next free shard — a release, a crash, a drain), and taking a
//     shard its key lists as free ends the probation (and the count of
//     verdicts). A new session, or a drain, clears mark and count. A
//     worker that takes some of a large assignment each StuckAfter is not
//     stuck.
//   - Stability: a written decision is a fixed point until a worker acts or
//     time passes, so the assignor, woken by its own writes, changes nothing.
//     Workers that follow their keys bring the fleet to rest (no change, no
//     move, no wake-up but a stuck verdict's end) in a bounded number of
//     steps, and each shard moves at most a few times plus once per stuck
//     verdict given or ended.
//   - Returning workers (State.Returning, inside their grace): their keys
//     are neither written nor deleted, and no other key gains a shard they
//     list that no other live member holds; the rest of the fleet is
//     planned as if those shards and workers did not exist. Decision.Wake
//     is at most the earliest end of a grace. A grace that has ended
//     changes nothing.
//   - Cordoned members gain no shard: their keys list only shards they
//     hold, unless every member planned for is cordoned.
//   - Frozen (State.Frozen): no hand-off starts; free shards are placed.
//   - Zones (Member.Zone): quotas are split among zones by capacity
//     first, then within each zone.
//   - Placement rules (State.Rules): no free shard is placed in the key
//     of a member a pin or avoid rule excludes; a held shard the rules
//     exclude from its holder is handed off (at the move budget, drains
//     first); a shard no member that may be given shards is allowed is
//     in no key (its excluded holder releases it) and is listed in
//     Decision.Unplaceable. Prefer rules choose among the members with
//     room. With hard rules the quotas are adjusted (members the rules
//     starve or overfill get fixed quotas, the others share the rest) and
//     balance is greedy. In load balance, placements, load moves and
//     exchanges go only where the hard rules allow, and prefer rules are
//     not read (docs/design.md, "Placement rules in the step").
//   - Warm moves (Member.Standby): a hand-off to a member that runs
//     standbys first lists the shard in that member's key as a standby,
//     while its holder keeps it, and starts only once the member reports
//     the standby ready (Member.Standbys) or Policy.PrepareTimeout after
//     the start (Decision.Cold). A preparation counts under
//     MaxMovesInFlight as a hand-off does; it keeps its member while the
//     move is still planned; the released shard counts for that member,
//     whose key lists it as a standby until it holds it. In a fleet with
//     standbys, load moves start only in a step that starts no other move
//     and are handed off together, once all are ready (see warm.go).
//   - Determinism: the same State and Policy give the same Decision,
//     whatever the order of the slices and maps in State. The scores and
//     tie-breaks are the assignor's alone: workers follow their keys and
//     never compute them.
//
// # What it does not guarantee
//
// A key is advice, the lock decides. A Decision is only as current as the
// State it was given; fencing tokens (package offsets) make a stale holder
// harmless. A worker acting on an old key may take a shard another key
// lists: Step then takes it out of that key, and the taker either keeps it
// (it is added to its key) or must release it, which counts as a hand-off
// in flight; this is why a worker must release every shard it holds that
// its key does not list, not only the shards taken out of it.
//
// Where a free shard goes among the members with room is not stable from
// one step to the next: it is placed on a ring with bounded loads (see
// placeFree), so it depends on which members still have room. The quotas
// are what is promised. The join and leave bounds are for equal weights:
// with unequal weights the quotas stay within one of each weighted share,
// but which members round up may change with a join or a leave.
//
// The stuck verdict reads the assignor's clock: StuckAfter must exceed the
// lock-delay (a shard freed by a session that ended cannot be taken before
// it) plus an acquire, or healthy workers given orphans are judged stuck;
// waits stamped after Now restart at Now. Stuck members can break the
// spread of one, and when every live member is stuck (or on probation)
// the free shards beyond the probations' wait in no key until a member
// joins, restarts or takes one. A restarted worker's wait is
// reset by the change in what it holds, not by its new session, unless it
// was marked stuck. Step does not schedule itself: the caller steps on
// every change of members, locks or keys, and at Decision.Wake.
//
// # Load balancing
//
// With State.Loads (not nil, and not the same for every shard) Step
// balances load per capacity instead of counts. A member's capacity is its
// weight (≤ 0 counts as 1); its ratio is the load of its shards (held, or
// assigned and not yet taken) ÷ its capacity; the band is the mean ratio
// × (1 ± LoadPolicy.Tolerance) over the members that take part: neither
// draining (unless all of those left drain), cordoned nor stuck. Those
// others keep what count balance lets them keep. A Decision then also
// guarantees:
//
//   - Placement by load: free shards, heaviest first, go to the member
//     with the lowest ratio after placing them (ties: fewer shards per
//     capacity, then the lower ID). A hand-off in flight goes elsewhere
//     than its holder unless no other member may take it.
//   - Calm: no load move while every member is inside the band; a member
//     outside is corrected only after LoadPolicy.Patience outside
//     (Assignment.OutOfBand), and then to the inner band (half the
//     tolerance), from the side it left the band on. A load move never lifts its receiver above the band's
//     top or above the giver's old ratio, never drops the giver below the
//     band's bottom or the receiver's old ratio (so the spread of the
//     ratios never widens), and narrows the gap between the two by more
//     than LoadPolicy.MinGain × the mean. Among the giver's shards, the
//     lightest that covers the need moves, else the heaviest that
//     qualifies: the fewest moves, then the lightest.
//   - Residence: a shard added to a key less than LoadPolicy.MinResidence
//     ago (Assignment.Arrived) is not moved for load; a drain, a stuck
//     worker or a failover still moves it.
//   - Waves and pacing: load moves are hand-offs (two steps, reason
//     shard.ReasonLoad) under MaxMovesInFlight, after drains and quota
//     hand-offs; none is planned while any hand-off is in flight, or while
//     the fleet is frozen. So a written decision is a fixed point: read
//     back, its hand-offs are in flight.
//   - Unreachable bands: a member whose heaviest shard alone is above the
//     band is pinned: that shard and the member's capacity leave the mean
//     (repeatedly, as the mean falls), the shard is never moved for load,
//     and the member's ratio counts as the mean plus its other shards'
//     load, so those move off.
//   - Lumps: a shard too heavy to move without pushing its receiver out of
//     the band (or its giver) moves only together with the moves, planned
//     in the same step and within the budget, that bring that member back
//     inside (a lump that alone is above the band pins its receiver, whose
//     other shards must then move off); otherwise it stays. Last, two
//     members may exchange a heavier shard for a lighter one, held to the
//     rules of a single move of the difference (two hand-offs), and only
//     alone in its step: with other moves its shards, free at once, are
//     placed back where they were.
//   - Count balance is exact: Loads nil, or one load for every shard (a
//     shard missing from Loads counts as the mean of the others), decides
//     exactly as without loads.
//
// What load balancing does not guarantee: the band when shards are too
// lumpy for single moves, a lump with its follow-ups, or an exchange to
// reach it (a bin-packing problem); the step then stops where no move
// pays rather than reshuffle, and a member left outside the band may see
// a move when noise opens one. Loads are as current as the workers' reports; the step does
// not smooth them, and noise the reports carry beyond the band for longer
// than Patience moves shards. Every load move lowers Σ load²/capacity
// over the members, so with loads that do not change the moves end.
//
// # How it fails
//
// Step returns an error wrapping ErrInvalidInput, naming the offending
// values (eight at most, then how many more), for an empty or duplicate
// member ID, an empty or duplicate shard ID, Holders of another length than
// Shards, a key of an empty worker ID, a key naming a shard outside the set
// or a shard twice, and a negative, NaN or infinite load. It never panics.
// Step costs O(N + K + W log W + H log H + F log W) for N shards, W
// members, K keyed shards, H shards some over-quota member holds and F
// placements. At 100,000 shards a step is bound by memory: it reads every
// shard's ID and holder and every ID in the keys. Load balancing adds
// O(N + F·W + M·(W log W + N)) for M load moves planned (at most
// MaxMovesInFlight), and an exchange tried O((N/W)²) per corrected member
// (4 partners); BenchmarkStepLoad measures it. A shard set that is a
// Config's IDs in order is indexed from the IDs' digits; any other is
// sorted and indexed by a map, which costs more. shardbench's
// assignor-step measures it (docs/benchmarks.md, "Assignor step").
package rebalance

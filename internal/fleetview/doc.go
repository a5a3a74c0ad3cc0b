// Package fleetview turns what the coordinator holds about a fleet (one
// shard.Snapshot, and optionally the offset store's checkpoints) into the
// operator's model of it: every shard with its owner, fencing token, owner
// since and why it last moved; every worker with its shards, session,
// version and whether it is live, draining or dead, cordoned (who, when,
// why) or returning from a restart inside its rejoin grace, with how many shards its
// assignment key gives it next to how many it owns and whether the assignor
// judges it stuck; which worker is the assignor, at which epoch, and the
// worker each shard is assigned to; the imbalance; the moves pending, read
// from the assignment keys (hand-offs in flight, free shards assigned and
// not yet taken), never planned again here; the fleet's freeze (who,
// when, why); the move queue: hand-offs in flight against the budget when
// the viewer knows it, and those waiting: the hand-offs the assignor's own
// step would start on this listing (assignor.Plan, a dry run of that step
// with no cap and the fleet unfrozen, shown and never written; a load wave
// shows only while no hand-off is in flight, as the step plans one then);
// and the recent ownership, membership and assignor changes, and
// the cordons and freezes operators set and lift, with their reasons. shardctl status and watch and
// the dashboard all show this one model, so they never disagree.
//
// What it guarantees: Build is pure (the time is an input) and its output is
// sorted (shards and workers by ID, events newest first), so the same inputs
// give the same JSON. A Tracker reports each ownership change it can see
// between two snapshots exactly once, with the reason the acquirer or
// releaser wrote into the shard's key.
//
// What it does not guarantee: seeing every change. Watches coalesce: a
// shard that moved twice between two snapshots shows as one move, and a
// fleet view is only as current as its snapshot. The "last renewal" of a
// session is not in a snapshot (Consul does not expose it), so liveness is
// shown as the coordinator decides it: a member key held by a session.
//
// Observers read at a bounded rate: Follow starts its listings (each is the
// whole prefix) at least MinSpacing (250 ms) apart, however fast the fleet
// writes.
//
// How it fails: Build never fails; a snapshot with no fleet config yields a
// Fleet whose Config is nil (Exists reports false). Follow returns the
// coordinator's error when the caller's onError says to stop.
package fleetview

// Package fleetview turns what the coordinator holds about a fleet (one
// shard.Snapshot, and optionally the offset store's checkpoints) into the
// operator's model of it: every shard with its owner, fencing token, owner
// since and why it last moved; every worker with its shards, session,
// version and whether it is live, draining or dead; the imbalance; and the
// recent ownership changes with their reasons. shardctl status and watch and
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
// How it fails: Build never fails; a snapshot with no fleet config yields a
// Fleet whose Config is nil (Exists reports false). Follow returns the
// coordinator's error when the caller's onError says to stop.
package fleetview

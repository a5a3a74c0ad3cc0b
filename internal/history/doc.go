// Package history is a fleet's ownership history: the changes of owner
// seen between two listings of the fleet (Changes, which fleetview's
// events are built on too), and the bounded record of them that the
// assignor keeps with the fleet in P/history (Log, Recorder), which
// shardctl history and explain and the dashboard read after the fact.
//
// What it guarantees: each change of owner visible between two listings
// is recorded once, with the acquirer's token, its worker, when it took
// the lock (its own clock) and why, and, for an end, whether the owner
// released the lock (and why), its session ended, or the key was
// deleted. A Log keeps the last Keep changes (and fewer when they would
// not fit in shard.MaxHistoryBytes), oldest first; a new assignor carries
// on from the stored log, recording what changed while no assignor was
// watching and nothing twice (Recorder.Seed).
//
// What it does not guarantee: every tenure. Listings coalesce: a shard
// taken and lost again between two listings (a few hundred milliseconds
// apart while an assignor runs; across an assignor change, the election
// and the changes it had not written yet; while a member without the
// history step is live, the whole time) leaves no trace, so a token can
// be missing from the log although a worker held it (Explain says so),
// and a tenure that ended unseen is recorded as Superseded. An end is
// known only between the last listing that showed the tenure held (Seen)
// and the one that showed it ended (At); Tenure.At says Unknown there. The log is as trustworthy as whoever may
// write the fleet's prefix: an edit by hand with Consul's KV API is not
// detected (the lock's token and the offsets store's floor, which
// shardctl explain shows beside it, are the authorities).
//
// How it fails: Decode refuses a value that is not a log of this format
// (a newer release's, an edit), and the Recorder then neither seeds from
// it nor overwrites a newer release's log.
package history

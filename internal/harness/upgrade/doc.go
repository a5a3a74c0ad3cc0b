// Package upgrade holds the mixed-version test: a fleet of `shardd worker`
// processes on a real Consul, with offsets in a real PostgreSQL, rolled
// one worker at a time from the previous release (release/previous: shardd
// built at that commit from the repository's history) to this tree and
// back, each worker stopped with a rejoin grace and started again under
// its ID with the other binary. It checks what a deploy must never do:
// two processes running one shard at an instant, a stale commit accepted,
// an offset that went back, a shard moving to another worker, a shard
// without a running handler for more than 4 s.
//
// The package has no code outside its test: it is where a protocol change
// proves it rolls out beside the release before it.
package upgrade

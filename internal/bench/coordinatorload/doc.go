// Package coordinatorload is shardbench's coordinator-load scenario: Consul
// HTTP requests per worker per second once a fleet of 12 has settled, at 128
// and at 4096 shards, and for shardlease also 100 workers at 10,000 (the
// large fleet of every goal), on the default policy. The assignor's worker
// alone lists the fleet: its own rate is a row of its own, with the others'
// beside it. shardlease holds one session and one blocking watch per worker,
// so its rate must not grow with the shard count. The default baseline holds
// one api.Lock per shard per worker: a session renewed every TTL/2 and a
// blocking query per lock, so its rate grows with the shards; the tuned one
// (on the default policy) one session whose check it passes every second, one
// blocking query on the prefix and a monitor per held lock; at 4096 shards
// it would be 12 × 4096 sessions and goroutines on this agent, so it is
// measured at 128 and at baselineLoadShards and the rate per shard is given.
//
// Sizes holds its parameters at full size and for a smoke run (--small);
// Scenario is what cmd/shardbench lists.
//
// What it guarantees: every rate is counted at the workers' own transports
// (every HTTP request each sends), over windows of wall time after the fleet
// has converged and settled; a window during which the assignor changed is
// left out of the assignor's row and counted in its note; a fleet not
// converged at the end says so in its row's note.
//
// How it fails: a fleet that does not converge within three minutes, or a
// baseline whose locks are not all held within three minutes, ends the
// scenario with an error; the rows measured before it are kept.
package coordinatorload

// Package takeaway measures how fast a worker's shards are owned again
// when it is taken away, for shardbench's crash-failover (a crash: SIGKILL,
// or an in-process worker's Consul connection cut) and graceful-handoff (a
// clean stop: SIGTERM) scenarios, which declare their sizes and call Rows.
//
// Every system runs on the common fleet of OS processes: shardlease and the
// tuned api.Lock baseline on the fast policy and on the default one, the
// default baseline on its own settings; shardlease also with the assignor's
// worker as the victim, and on the large in-process fleet. Each row is one
// system, policy and victim over the trials, on one fleet reused across
// them: a new worker replaces the victim and the fleet is ready again
// before the next trial. The time ends when the last of the victim's shards
// has a new handler running, as the workers report it (their history's
// start lines, by their wall clocks); when the observer saw them all owned
// again, and when it saw the first leave the victim, are beside it.
//
// What it guarantees: the rows of one comparison share scenario, metric and
// policy (the default baseline's is bench.PolicyDefaults), each shardlease
// row names its policy and shows that it meets shard.LeasePolicy's rules,
// and a row with fewer trials than asked says how many and why.
//
// How it fails: a victim's shards not owned again within a few times the
// policy's detection and lock-delay, or their handlers not started within
// 10 s after, end the row and the scenario with an error; the rows measured
// before it are kept, the failing one too when it has any trial.
package takeaway

// Package scaleout is shardbench's scale-out scenario: a 13th worker joins
// a ready fleet of 12 over 128 shards, and the shards moved, the time until
// max−min ≤ 1 with every shard owned, and the spread when measured are
// taken, for shardlease and the tuned baseline on the fast policy and on
// the default one, and for the default baseline; then shardlease alone on
// the large fleet (a 101st worker joins 100 over 10,000), with the bytes the
// whole fleet reads from Consul until it is balanced again.
//
// Sizes holds its parameters at full size and for a smoke run (--small);
// Scenario is what cmd/shardbench lists.
//
// What it guarantees: the joiner leaves again after each trial and the fleet
// is ready again before the next; a baseline, which never balances (the
// default one) or only caps a worker's share (the tuned one), is watched for
// Params.BaselineWindow, and its rows say in how many trials it converged
// and that the others' figure is that window.
//
// How it fails: shardlease not balanced within 30 s, or a fleet not ready
// again within two minutes, ends the scenario with an error; the rows
// measured before it are kept.
package scaleout

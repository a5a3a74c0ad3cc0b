// Package reshard is shardbench's reshard scenario: 12 workers over 128
// shards on Consul (in-process, each with its own client and session)
// reshard to 256 shards and back to 128, each trial on a fresh fleet. The
// handler holds its shard and, told it closes (worker.Claim.Closing),
// closes it at once: a parent needs no time to reach its end, so the
// figures are the reshard's own cost.
//
// Measured, by the workers' own clocks (each handler's runs, each close,
// each child's first start):
//   - a parent's close to its children's first handler start: for each
//     child, its first start less the latest close of its parents;
//   - the whole reshard: from the operator's call (admin.Reshard) to the
//     last child's first handler start;
//   - the processing lost by shards not involved at the moment: a parent
//     from the call until it is asked to close, a child from its first
//     start until the reshard is done, each must have a handler running
//     throughout; the row is the most any one shard lost in a reshard.
//
// Sizes holds its parameters at full size and for a smoke run (--small);
// Scenario is what cmd/shardbench lists. No baseline: Consul's lock
// recipe has no resharding.
//
// How it fails: a reshard not done within a minute, or a fleet that does
// not settle between the two, is an error.
package reshard

// Package zones is shardbench's zone scenarios, on `shardd worker`
// processes in three zones (--zone) on the run's Consul agent:
//
//   - zone-outage: every worker of one zone is kill -9'd at once (the
//     zones take turns): how long until the zone's shards are all owned
//     again and their new handlers run, whether any shard of the other
//     zones moved meanwhile, and how far each surviving zone's share is
//     from its capacity's once the fleet is at rest.
//   - zone-drain: one zone is drained (admin.Operator.DrainZone, as
//     `shardctl drain --zone` does) and undrained: the longest time a
//     shard had no running handler (the workers' histories), the most
//     hand-offs in flight at once against the fleet's move budget (the
//     assignment keys, as `shardctl status` counts them), and how long
//     the zone took to empty.
//
// Sizes holds the parameters at full size (12 workers × 128 shards, at
// least 6 trials) and for a smoke run; OutageScenario and DrainScenario are
// what cmd/shardbench lists.
//
// What it guarantees: each trial starts from a fleet at rest with every
// worker back, each zone within one shard of its share; figures are the
// workers' own (start lines, handler runs) where times must be exact, and
// the observer's views for who owns what.
//
// How it fails: a fleet not at rest within two minutes, a zone's shards
// not owned again within 30 s, or handlers not running within 10 s end the
// scenario with an error; the trials measured before it keep their rows.
package zones

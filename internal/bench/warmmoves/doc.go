// Package warmmoves is shardbench's warm-moves scenario: what standbys buy a
// stateful handler, one whose state takes a fixed time to rebuild when it
// starts cold (`shardd worker --restore`), and what they cost.
//
// Three parts, each against its cold twin in the same run:
//
//   - Planned moves: a worker joins a fleet of `shardd worker` processes
//     and is then drained. With a standby side every moved shard is
//     prepared on its new owner first and starts warm; without one
//     (`--standby=false`) every moved shard restores. The figure is the
//     longest time a moved shard processed nothing, from its handler's end
//     line to the next start line in the workers' histories.
//   - Failover: an owner is kill -9'd with one standby per shard
//     (shardctl balance -standbys 1) and with none, the trials taking
//     turns on one fleet on shard.FastPolicy: until every lost shard's new
//     handler processes, against until its new owner fenced it (the
//     lease's failover), both by the workers' own history lines.
//   - Cost: in-process workers on Consul, with the standby side and no
//     standbys, then with one standby per shard: Consul requests per
//     worker per second, the process's CPU, and the handler time the
//     standbys add.
package warmmoves

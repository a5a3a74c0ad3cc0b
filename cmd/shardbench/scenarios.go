package main

import "github.com/shardlease/shardlease/internal/bench"

// scenarios lists every scenario, in the order `--scenario all` runs and
// prints them: the ownership rows first, then load and scale, then the
// in-process ones.
var scenarios = bench.Suite{
	{Name: "crash-failover", Run: crashFailover,
		Summary: "one of 12 worker processes over 128 shards is kill -9'd, for shardlease and the tuned api.Lock baseline on FastPolicy and DefaultPolicy and for api.Lock's defaults (≥ 20 trials): time until all its shards have new handlers running; also the assignor's worker, at 12 × 128 and 100 × 10,000"},
	{Name: "graceful-handoff", Run: gracefulHandoff,
		Summary: "one of 12 worker processes over 128 shards gets SIGTERM, the same systems and policies (≥ 20 trials; shardlease also one of 100 over 10,000): time until all its shards have new handlers running"},
	{Name: "scale-out", Run: scaleOut,
		Summary: "a 13th worker joins 12 over 128 shards, shardlease and the tuned baseline on both policies and api.Lock's defaults (shardlease also a 101st, 100 over 10,000): shards moved, time until max−min ≤ 1, bytes read"},
	{Name: "rolling-restart", Run: rollingRestart,
		Summary: "each of 12 `shardd worker` processes over 128 shards is restarted in turn (SIGTERM, 3 s down, the same --id), with --rejoin-grace 10s and without (≥ 3 trials): shard moves, the longest time a shard has no handler, max−min"},
	{Name: "coordinator-load", Run: coordinatorLoad,
		Summary: "Consul HTTP requests per worker per second in steady state, 12 workers at 128 and 4096 shards and 100 at 10,000 (baseline: 12 at 128 and 512); the assignor's worker's own rate"},
	{Name: "cold-start", Run: coldStartScenario,
		Summary: "100 workers × 10,000 shards start together: time until all owned with max−min ≤ 1, failed ÷ successful acquires (also 100 × 1,000; all three systems at 12 × 128)"},
	{Name: "lock-ops", Run: lockOps,
		Summary: "raw Consul lock operations per second on the run's agent: one KV acquire per request, and 64 or 128 per /v1/txn"},
	{Name: "commit-throughput", Run: commitThroughput,
		Summary: "offset commits/s per backend (memory, bolt, consul, postgres), fenced vs the same write unfenced, single and batched"},
	{Name: "assignor-step", Run: assignorStep,
		Summary: "rebalance.Step in-process at 1,000 workers × 100,000 shards: cold, steady and one join (no Consul; system rebalance)"},
	{Name: "stuck-worker", Run: stuckWorker,
		Summary: "one of 12 workers over 128 shards is live but never acquires, for 3 minutes a trial: unowned shard-time, owner changes per shard"},
	{Name: "stream-e2e", Run: streamE2E,
		Summary: "examples/jetstream's pipeline, a nats-server process → ordered consumers → PostgreSQL, 12 workers × 128 partitions: events/s with FencedTx against the same transaction unfenced, and the latency from publish to committed effect"},
	{Name: "skewed-load", Run: skewedLoad,
		Summary: "a load-aware fleet (10 % band) and a count-based one, 12 workers × 128 shards each, side by side: Zipf(1.1) loads, then ±20 % noise every 10 s for 10 minutes, one shard tripled at minute 5: max worker load ÷ mean, time to converge, moves per minute, time back in the band"},
}

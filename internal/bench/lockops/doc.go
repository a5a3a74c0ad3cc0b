// Package lockops is shardbench's lock-ops scenario. It measures the ceiling
// the coordinator itself sets: how many lock operations per second the agent
// commits, sent one after another by one client, (a) one KV acquire per
// request (PUT /v1/kv/K?acquire=S, what api.Lock sends) and (b) in full
// transactions: 64 locks each followed by a get, as shard/consul's Acquire
// sends them, and 128 bare locks, Consul's cap on one /v1/txn. Every lock is
// a Raft write; a transaction is one write for all of its operations. A cold
// start of N shards needs at least N lock operations, so N ÷ (b) is the
// floor under its time on this agent.
//
// Sizes holds its parameters at full size and for a smoke run (--small);
// Scenario is what cmd/shardbench lists.
//
// What it guarantees: every lock is taken on a fresh key of a prefix of its
// own, by a session with no TTL and no lock-delay, and the prefix and
// session are removed after each burst.
//
// How it fails: a refused acquire of a fresh key, or a rolled-back
// transaction, is an error naming it: it means the agent is not what the
// scenario assumes.
package lockops

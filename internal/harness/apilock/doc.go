// Package apilock is the api.Lock baseline that cmd/shardbench measures
// shardlease against, as a library: a worker that owns shards with api.Lock
// from github.com/hashicorp/consul/api and nothing else, in two forms.
// shardbench runs it in-process (its coordinator-load and cold-start rows)
// and as OS processes through the program apilockd (its crash and stop
// rows), so both run the same code.
//
//   - Default: what a Consul user writes without reading the options. For
//     every shard one goroutine holds one api.Lock made with only Key and
//     Value set: one session per lock (TTL 15 s, lock-delay 15 s, bound to
//     serfHealth), a 15 s blocking query on every key it waits for, and a
//     5 s retry after a refusal in lock-delay. It never balances: a shard
//     stays with whoever locked it first.
//   - Tuned: what a competent Consul user writes in an afternoon with
//     api.Lock alone. One session per worker, shared by all its locks
//     (LockOptions.Session), bound to a TTL health check registered as an
//     instance of the service ServiceName and to serfHealth, with the TTL
//     and lock-delay of the shardlease policy it is compared with (the
//     mechanism shardlease uses); the worker passes the check every renewal
//     interval. It locks Prefix/members/<id> with the session to say it is
//     live, and tries at most ⌈N/W⌉ shards at a time, W being the member
//     keys held: it releases the excess when W grows. It watches the prefix
//     with one blocking query and tries free shards in an order that starts
//     at a point of its own, so that workers collide less; a try refused
//     because of a lock-delay is retried one lock-delay later (api.Lock
//     alone would wait a fixed 5 s). The channel api.Lock.Lock returns stops
//     the shard's work when its lock is lost; a lost session ends every
//     lock and the worker starts over with a new one.
//
// What neither does: fence. A shard's work starts when its lock is
// acquired (Config.OnStart), with no token to hand a store, so a worker
// cut off from Consul keeps working beside the next owner until it hears
// of the loss; the lock-delay is all that stands between them.
//
// Keys: locks at Prefix/shards/<shard> with the worker's ID as value, which
// is how an observer tells owners apart; members at Prefix/members/<id>.
package apilock

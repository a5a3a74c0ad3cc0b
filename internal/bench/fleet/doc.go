// Package fleet is what shardbench's scenarios run on: one system's
// workers on one fresh KV prefix of the run's Consul agent, driven and
// observed alike whatever the system — shardlease (Shardlease: in-process
// workers, each with its own Consul client and session), the api.Lock
// baselines (Baseline: internal/harness/apilock's workers, with their
// defaults or tuned to a shardlease policy), or either as OS processes
// (Procs: `shardd worker` or apilockd, through internal/harness/procfleet).
//
// A Fleet adds, crashes and stops workers, and shows who owns what
// (procfleet.View) and when each shard's latest handler started
// (procfleet.StartLog). A crash of an in-process worker cuts its Consul
// connection (severable), so that Consul sees it as it would a kill -9'd
// process; every in-process worker's transport counts what it sends and
// reads (requests, acquires, bytes). Shape and Size say which fleet a
// scenario runs (Common and Large, and their smoke sizes); Run keeps one at
// its starting size across trials; WaitFor watches a fleet until a
// condition holds, reading a large prefix at a bounded rate so that the
// observer does not compete with the workers it measures.
//
// What it guarantees: every fleet has a fresh prefix, and Close stops its
// remaining workers, waits for the crashed ones, and deletes its keys (best
// effort, so that a given agent does not keep every run's keys). Times
// that must be exact come from the workers (StartLog), not the observer.
//
// What it does not do: judge anything; the figures and goals are the
// scenarios'.
//
// How it fails: a worker that cannot be built, started or configured is an
// error from Add or the constructor; WaitFor's error names what was not
// reached, within how long, and the last view.
package fleet

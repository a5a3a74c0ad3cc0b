// Package crashfailover is shardbench's crash-failover scenario: a worker is
// kill -9'd (SIGKILL; an in-process worker's Consul connection cut), and the
// time until all its shards have new handlers running is measured for
// shardlease and the api.Lock baselines (internal/bench/takeaway says how,
// and what it guarantees). This package declares the scenario and its sizes:
// Sizes.Full runs the common fleet of 12 worker processes over 128 shards
// and the large one of 100 over 10,000, at least 20 trials a row;
// Sizes.Small, for a smoke run, 3 over 16 and 10 over 200, with the default
// baseline quick.
//
// How it fails: as takeaway.Rows does.
package crashfailover

// Package demo is `shardd demo`: a whole fleet in one process on the
// embedded coordinator, each owned shard consuming a synthetic stream and
// committing offsets through its claim, while faults are injected on a
// seeded schedule — a worker crashes (its session is abandoned), a worker
// freezes past its TTL with commits in flight and then resumes (those late
// commits must be rejected by the fence), a worker joins.
//
// The fleet and its faults are internal/inproc's (a Fleet of Members on the
// chosen Backend), as the simulation's are. Its Auditor around the offset
// store checks, independently of the store, that no commit is accepted with
// a token below one already fenced or accepted for its shard, that accepted
// offsets never go backwards, that no valid commit is refused, and that
// every new owner starts from at least the last offset an older owner had
// accepted. The summary reports those counts; Run returns an error when any
// invariant failed.
package demo

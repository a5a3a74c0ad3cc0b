package rebalance

import "errors"

// ErrInvalidInput: Step was given an empty or duplicate member ID, an
// empty or duplicate shard ID, an assignment key of an empty worker ID or
// one naming a shard outside the set or a shard twice, Holders of another
// length than Shards, or a negative, NaN or infinite load.
// Such an input has no well-defined answer, and guessing one would hide a
// corrupted key or listing. The wrapping error names the values; compare
// with errors.Is.
var ErrInvalidInput = errors.New("rebalance: invalid input")

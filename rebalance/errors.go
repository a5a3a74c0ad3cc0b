package rebalance

import "errors"

// ErrInvalidInput: Compute or Step was given an empty or duplicate member
// ID or an empty or duplicate shard ID, or Step an assignment key of an
// empty worker ID or one naming a shard outside the set or a shard twice.
// Such an input has no well-defined answer, and guessing one would let
// workers disagree or hide a corrupted key. The wrapping error names the
// values; compare with errors.Is.
var ErrInvalidInput = errors.New("rebalance: invalid input")

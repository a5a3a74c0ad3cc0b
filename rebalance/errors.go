package rebalance

import "errors"

// ErrInvalidInput: Compute was given an empty or duplicate member ID or an
// empty or duplicate shard ID. Such a snapshot has no well-defined plan, and
// guessing one would let workers disagree. The wrapping error names the
// values; compare with errors.Is.
var ErrInvalidInput = errors.New("rebalance: invalid input")

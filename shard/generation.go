package shard

import "fmt"

// A token is ordered by the fleet's generation first and the
// coordinator's index second: Token = generation<<IndexBits | index. A
// coordinator rebuilt empty or restored from an older snapshot counts its
// indexes from an earlier point again, below the floors the offsets
// stores hold; raising the fleet's generation (Fleet.RaiseGeneration,
// `shardctl recover`) puts every token granted afterwards above every
// token of the lost history, however far that history went.
//
// Generation 0 is every fleet's first: its tokens are the coordinator's
// indexes unchanged, as in release 0.1.0.
const (
	// IndexBits is how many low bits of a token hold the coordinator's
	// index: 2^40, about 10^12 writes, is far beyond any Consul's.
	IndexBits = 40
	// MaxGeneration is the highest generation a token can carry: tokens
	// stay below 2^63, so that stores that keep them as signed 64-bit
	// integers (PostgreSQL's bigint) order them right.
	MaxGeneration = 1<<(63-IndexBits) - 1
	// MaxIndex is the highest coordinator index a token can carry.
	MaxIndex = 1<<IndexBits - 1
)

// MakeToken is the token of a lock taken at coordinator index index in
// generation gen. It returns an error for an index or generation that does
// not fit (MaxIndex, MaxGeneration).
func MakeToken(gen uint32, index uint64) (Token, error) {
	if gen > MaxGeneration {
		return 0, fmt.Errorf("%w: generation %d is above the highest, %d", ErrInvalidArgument, gen, MaxGeneration)
	}
	if index > MaxIndex {
		return 0, fmt.Errorf("%w: coordinator index %d does not fit in a token (at most %d): raise the fleet's generation on a coordinator rebuilt from empty",
			ErrInvalidArgument, index, uint64(MaxIndex))
	}
	return Token(uint64(gen)<<IndexBits | index), nil
}

// Generation is the fleet generation the token was granted in.
func (t Token) Generation() uint32 { return uint32(uint64(t) >> IndexBits) }

// Index is the coordinator index of the write that granted the token:
// what a coordinator compares it with (a check-and-set on the lock, an
// assignment's AsOf).
func (t Token) Index() uint64 { return uint64(t) & MaxIndex }

// TokenAt is the token of a lock key whose value is o at modify index
// index: the generation o records and the index. A key whose index does
// not fit in a token (MaxIndex) has the highest token of its generation,
// so that it is never taken for an older one.
func (o Owner) TokenAt(index uint64) Token {
	t, err := MakeToken(o.Gen, min(index, MaxIndex))
	if err != nil { // a generation above MaxGeneration, written by hand
		return Token(1<<63 - 1)
	}
	return t
}

// CheckRaise returns nil when a fleet at generation stored may be raised
// to gen, and otherwise an error wrapping ErrInvalidArgument that names
// both: coordinators return it from Fleet.RaiseGeneration.
func CheckRaise(stored, gen uint32) error {
	switch {
	case gen > MaxGeneration:
		return fmt.Errorf("%w: generation %d is above the highest, %d", ErrInvalidArgument, gen, MaxGeneration)
	case gen <= stored:
		return fmt.Errorf("%w: generation %d is not above the fleet's, %d: a generation is only ever raised", ErrInvalidArgument, gen, stored)
	}
	return nil
}

// NoConfigToRaise is Fleet.RaiseGeneration's error for a fleet with no
// stored config.
func NoConfigToRaise() error {
	return fmt.Errorf("%w: the fleet has no stored config to change (raise the generation of, or reshard): start one of its workers (it writes the config) and try again", ErrInvalidArgument)
}

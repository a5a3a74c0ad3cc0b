package offsets

import (
	"fmt"

	"github.com/shardlease/shardlease/shard"
)

// StaleTokenError is the error a Store returns when a token is below the
// shard's floor. It unwraps to ErrStaleToken. Backends that check the rule
// outside Go (a SQL statement, say) build one so the message is the same in
// every backend.
type StaleTokenError struct {
	Shard shard.ID
	Token shard.Token // the token offered
	Floor shard.Token // the floor it was checked against
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("%v: shard %s: token %d is below floor %d", ErrStaleToken, e.Shard, e.Token, e.Floor)
}

// Unwrap makes errors.Is(err, ErrStaleToken) true.
func (e *StaleTokenError) Unwrap() error { return ErrStaleToken }

// ValidShard returns an error wrapping shard.ErrInvalidArgument when s is
// empty. Load checks it before any I/O; ApplyFence and ApplyCommit check it
// for the writes.
func ValidShard(s shard.ID) error {
	if s == "" {
		return fmt.Errorf("offsets: empty shard ID: %w", shard.ErrInvalidArgument)
	}
	return nil
}

// validToken refuses the token 0: coordinators issue tokens from 1, so a
// zero token is a caller that forgot its claim, and accepting it would store
// an offset that looks as if no commit had happened (Checkpoint.Token 0).
func validToken(s shard.ID, t shard.Token) error {
	if t == 0 {
		return fmt.Errorf("offsets: shard %s: token 0 is not a fencing token: %w", s, shard.ErrInvalidArgument)
	}
	return nil
}

// ApplyFence applies Fence(s, token) to cp, the shard's current checkpoint,
// and returns the checkpoint to store: cp with its floor raised to token, or
// cp unchanged when token equals the floor. A token below the floor gives a
// *StaleTokenError. Argument errors come before the token check.
func ApplyFence(cp Checkpoint, s shard.ID, token shard.Token) (Checkpoint, error) {
	if err := ValidShard(s); err != nil {
		return cp, err
	}
	if err := validToken(s, token); err != nil {
		return cp, err
	}
	if token < cp.Floor {
		return cp, &StaleTokenError{Shard: s, Token: token, Floor: cp.Floor}
	}
	cp.Floor = token
	return cp, nil
}

// ApplyCommit applies Commit(s, token, offset) to cp, the shard's current
// checkpoint, and returns the checkpoint to store: offset written by token,
// with the floor raised to token. A token below the floor gives a
// *StaleTokenError; a negative offset an error wrapping ErrInvalidOffset.
// Argument errors come before the token check, so a bad call is reported as
// such whatever the stored state.
func ApplyCommit(cp Checkpoint, s shard.ID, token shard.Token, offset int64) (Checkpoint, error) {
	if err := ValidShard(s); err != nil {
		return cp, err
	}
	if err := validToken(s, token); err != nil {
		return cp, err
	}
	if offset < 0 {
		return cp, fmt.Errorf("%w: shard %s: offset %d is negative", ErrInvalidOffset, s, offset)
	}
	if token < cp.Floor {
		return cp, &StaleTokenError{Shard: s, Token: token, Floor: cp.Floor}
	}
	return Checkpoint{Offset: offset, Token: token, Floor: token}, nil
}

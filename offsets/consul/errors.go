package consul

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Sentinel errors; compare with errors.Is.
var (
	// ErrUnavailable is offsets.ErrUnavailable: Consul could not be
	// reached or had no leader; nothing was written and the call may be
	// retried.
	ErrUnavailable = offsets.ErrUnavailable
	// ErrOutcomeUnknown is offsets.ErrOutcomeUnknown: a write was sent and
	// no answer came back (the connection broke, the context ended, or the
	// server failed while committing it). It may or may not have been
	// applied. Retrying with the same token is safe: an equal token may
	// overwrite.
	ErrOutcomeUnknown = offsets.ErrOutcomeUnknown
	// ErrPermissionDenied: the ACL token may not read or write the offsets
	// keys. Retrying with the same token fails the same way.
	ErrPermissionDenied = errors.New("offsets/consul: permission denied")
	// ErrCorrupt is offsets.ErrCorrupt: the value under a shard's key is
	// not an offsets record, or breaks the rule. Reads and writes of that
	// shard fail until an operator repairs it; it is never overwritten.
	ErrCorrupt = offsets.ErrCorrupt
)

// fail builds the error for a failed request about shard s ("" for a
// batch); k is what consulkv.Classify made of it. A context its caller
// ended adds its error and cause, so a handler can tell revoked from lost.
func (st *Store) fail(ctx context.Context, op string, s shard.ID, err error, k consulkv.Kind) error {
	where := fmt.Sprintf("offsets/consul: %s shard %s%s", op, s, st.address)
	if s == "" {
		where = fmt.Sprintf("offsets/consul: %s%s", op, st.address)
	}
	cause := consulkv.CallerCause(ctx)
	if cause != nil {
		if !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w: %w", err, ctx.Err())
		}
		if cause != ctx.Err() && !errors.Is(err, cause) {
			err = fmt.Errorf("%w: %w", err, cause)
		}
	}
	switch k {
	case consulkv.KindPermission:
		return fmt.Errorf("%w: %s: %w; the ACL token needs key_prefix %q read and write", ErrPermissionDenied, where, err, st.keyPrefix)
	case consulkv.KindRefused:
		return fmt.Errorf("%w: %s: Consul refused the request: %w", shard.ErrInvalidArgument, where, err)
	case consulkv.KindOutcomeUnknown:
		return fmt.Errorf("%w: %s: the write was sent but no answer came back, so it may or may not have been applied: %w", ErrOutcomeUnknown, where, err)
	}
	if cause != nil {
		return fmt.Errorf("%s: not applied: %w", where, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, where, err)
}

// ctxErr reports a done context before any request, with its cause.
func ctxErr(ctx context.Context, op string, s shard.ID) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("offsets/consul: %s shard %s: %w: %w", op, s, err, cause)
	}
	return fmt.Errorf("offsets/consul: %s shard %s: %w", op, s, err)
}

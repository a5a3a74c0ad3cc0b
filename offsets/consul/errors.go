package consul

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/shardlease/shardlease/shard"
)

// Sentinel errors; compare with errors.Is.
var (
	// ErrUnavailable: Consul could not be reached or had no leader; nothing
	// was written and the call may be retried.
	ErrUnavailable = errors.New("offsets/consul: consul unavailable")
	// ErrOutcomeUnknown: a write was sent and no answer came back (the
	// connection broke, the context ended, or the server failed while
	// committing it). It may or may not have been applied. Retrying with
	// the same token is safe: an equal token may overwrite.
	ErrOutcomeUnknown = errors.New("offsets/consul: outcome unknown")
	// ErrPermissionDenied: the ACL token may not read or write the offsets
	// keys. Retrying with the same token fails the same way.
	ErrPermissionDenied = errors.New("offsets/consul: permission denied")
	// ErrCorrupt: the value under a shard's key is not an offsets record,
	// or breaks the rule. Reads and writes of that shard fail until an
	// operator repairs it; it is never overwritten.
	ErrCorrupt = errors.New("offsets/consul: corrupt checkpoint")
)

// failure is what one failed request means.
type failure int

const (
	failNotSent    failure = iota // never reached Consul, or refused before applying: nothing written
	failRefused                   // Consul refused the request as malformed or too large
	failPermission                // ACL
	failUnknown                   // a write that may have been applied
)

// classifyErr reads an error of api.Txn. write says whether the request
// carried a write (a read's failure never leaves anything half-done).
func classifyErr(err error, write bool) failure {
	msg := err.Error()
	var op *net.OpError
	switch {
	case isPermission(msg):
		return failPermission
	case strings.Contains(msg, "too large") || strings.Contains(msg, "too many operations"):
		return failRefused
	case errors.As(err, &op) && op.Op == "dial":
		return failNotSent // connection refused, no route: the request never left
	case strings.Contains(msg, "No cluster leader"):
		return failNotSent // refused before the Raft log took it
	case !write:
		return failNotSent
	default:
		// A broken connection, a timeout, or a 5xx while applying (the
		// leader may have lost leadership after appending the entry).
		return failUnknown
	}
}

func isPermission(s string) bool {
	return strings.Contains(s, "Permission denied") || strings.Contains(s, "ACL not found") ||
		strings.Contains(s, "token not found")
}

// fail builds the error for a failed request about shard s ("" for a
// batch).
func (st *Store) fail(ctx context.Context, op string, s shard.ID, err error, f failure) error {
	where := fmt.Sprintf("offsets/consul: %s shard %s%s", op, s, st.address)
	if s == "" {
		where = fmt.Sprintf("offsets/consul: %s%s", op, st.address)
	}
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w: %w", err, ctx.Err())
	}
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() && !errors.Is(err, cause) {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	switch f {
	case failPermission:
		return fmt.Errorf("%w: %s: %w; the ACL token needs key_prefix %q read and write", ErrPermissionDenied, where, err, st.keyPrefix)
	case failRefused:
		return fmt.Errorf("%w: %s: Consul refused the request: %w", shard.ErrInvalidArgument, where, err)
	case failUnknown:
		return fmt.Errorf("%w: %s: the write was sent but no answer came back, so it may or may not have been applied: %w", ErrOutcomeUnknown, where, err)
	}
	if ctx.Err() != nil {
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

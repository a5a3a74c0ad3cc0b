package consul

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/shard"
)

// ErrPermissionDenied: Consul refused a request for lack of ACL permission.
// It is not transient: retrying with the same token fails the same way. The
// error names the operation and the permissions the token needs. It wraps
// shard.ErrPermissionDenied, so callers that know only the shard package
// (the worker) can tell it from a transient failure.
var ErrPermissionDenied error = sentinel{msg: "consul: permission denied", wraps: shard.ErrPermissionDenied}

// sentinel is a package sentinel error that also matches a shard sentinel.
type sentinel struct {
	msg   string
	wraps error
}

func (s sentinel) Error() string { return s.msg }
func (s sentinel) Unwrap() error { return s.wraps }

// fail turns an error from a call to Consul into one of the package's
// errors (nil stays nil). ctx is the call's: when its caller ended it,
// the cause is the answer, whatever the transport said. Otherwise, as
// consulkv.Classify reads it: ACL refusals wrap ErrPermissionDenied;
// connection failures, timeouts, 429, 5xx (among them "No cluster leader"
// during an election) wrap shard.ErrUnavailable, a write's of unknown
// outcome too (the worker treats both alike: it retries and releases
// what it cannot account for); a request Consul calls malformed wraps
// shard.ErrInvalidArgument.
func (c *Coordinator) fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cause := consulkv.CallerCause(ctx); cause != nil {
		return cause
	}
	switch consulkv.Classify(err, true) {
	case consulkv.KindPermission:
		return c.permission(op, consulkv.Detail(err))
	case consulkv.KindRefused:
		return fmt.Errorf("%w: consul %s at %s refused the request: %s", shard.ErrInvalidArgument, op, c.cfg.Address, consulkv.Detail(err))
	case consulkv.KindOther:
		return fmt.Errorf("shard/consul: %s at %s: %s", op, c.cfg.Address, consulkv.Detail(err))
	}
	if d, ok := consulkv.TimedOut(ctx); ok {
		return fmt.Errorf("%w: consul %s at %s: no answer within %v: %w", shard.ErrUnavailable, op, c.cfg.Address, d, err)
	}
	var se api.StatusError
	if errors.As(err, &se) {
		return fmt.Errorf("%w: consul %s at %s: %s", shard.ErrUnavailable, op, c.cfg.Address, consulkv.Detail(err))
	}
	// Anything else comes from the transport (refused, reset, DNS, TLS
	// handshake, a truncated body): the agent could not be reached.
	return fmt.Errorf("%w: consul %s at %s: %w", shard.ErrUnavailable, op, c.cfg.Address, err)
}

// permission is the error for an ACL refusal: what was refused and what
// the token needs for this fleet.
func (c *Coordinator) permission(op, detail string) error {
	return fmt.Errorf("%w: consul %s at %s: %s; the token (CONSUL_HTTP_TOKEN or -consul-token) needs key_prefix %q write, session write on the agent's node, and, for liveness %q, service %q write (each session's health check is registered as an instance of it)",
		ErrPermissionDenied, op, c.cfg.Address, detail, c.cfg.Prefix+"/", LivenessCheck, ServiceName)
}

// sessionGone is the error for a session Consul no longer has.
func sessionGone(id shard.SessionID, why string) error {
	return fmt.Errorf("%w: session %q %s", shard.ErrSessionInvalid, id, why)
}

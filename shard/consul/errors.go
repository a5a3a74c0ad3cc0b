package consul

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hashicorp/consul/api"

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
// errors. parent is the caller's context: when it has ended, its cause is
// the answer, whatever the transport said. Otherwise: ACL refusals wrap
// ErrPermissionDenied; connection failures, timeouts, 429, 5xx (among them
// "No cluster leader" during an election) wrap shard.ErrUnavailable; a
// request Consul calls malformed wraps shard.ErrInvalidArgument.
func (c *Coordinator) fail(parent context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if parent.Err() != nil {
		return context.Cause(parent)
	}
	var se api.StatusError
	if errors.As(err, &se) {
		switch {
		case se.Code == http.StatusForbidden || isPermission(se.Body):
			return c.permission(op, se.Body)
		case se.Code == http.StatusTooManyRequests || se.Code >= 500:
			return fmt.Errorf("%w: consul %s at %s: HTTP %d: %s", shard.ErrUnavailable, op, c.cfg.Address, se.Code, se.Body)
		case se.Code == http.StatusBadRequest || se.Code == http.StatusRequestEntityTooLarge:
			return fmt.Errorf("%w: consul %s at %s refused the request: HTTP %d: %s", shard.ErrInvalidArgument, op, c.cfg.Address, se.Code, se.Body)
		default:
			return fmt.Errorf("shard/consul: %s at %s: HTTP %d: %s", op, c.cfg.Address, se.Code, se.Body)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: consul %s at %s: no answer within %v: %w", shard.ErrUnavailable, op, c.cfg.Address, c.cfg.RequestTimeout, err)
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

func isPermission(s string) bool {
	return strings.Contains(s, "Permission denied") || strings.Contains(s, "ACL not found") || strings.Contains(s, "token not found")
}

// txnRefusal is why one operation of a rolled-back transaction failed.
type txnRefusal int

const (
	refusedOther      txnRefusal = iota
	refusedHeld                  // lock held by another session
	refusedLockDelay             // key in lock-delay after an invalidation
	refusedNotHeld               // unlock of a key the session does not hold
	refusedBadSession            // the session does not exist
	refusedPermission            // ACL
	refusedStaleIndex            // CAS lost
	refusedKeyMissing            // get of a missing key
)

// classifyTxnError reads Consul's TxnError text (agent/consul/state/txn.go
// and txn_endpoint.go in 1.14; the texts have been stable since 0.7).
func classifyTxnError(what string) txnRefusal {
	switch {
	case strings.Contains(what, "lock is already held"):
		return refusedHeld
	case strings.Contains(what, "due to lock delay"):
		return refusedLockDelay
	case strings.Contains(what, "lock isn't held"):
		return refusedNotHeld
	case strings.Contains(what, "invalid session") || strings.Contains(what, "missing session"):
		return refusedBadSession
	case isPermission(what):
		return refusedPermission
	case strings.Contains(what, "index is stale"):
		return refusedStaleIndex
	case strings.Contains(what, "doesn't exist"):
		return refusedKeyMissing
	default:
		return refusedOther
	}
}

// sessionGone is the error for a session Consul no longer has.
func sessionGone(id shard.SessionID, why string) error {
	return fmt.Errorf("%w: session %q %s", shard.ErrSessionInvalid, id, why)
}

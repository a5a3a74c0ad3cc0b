package consulkv

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/hashicorp/consul/api"
)

// Kind is what a failed call means for its caller.
type Kind int

const (
	// KindOther: an answer no caller expects (a 404 from an endpoint that
	// has no reason to give one); report it as it is.
	KindOther Kind = iota
	// KindUnavailable: nothing was applied and the call may be retried:
	// the agent could not be reached, the cluster had no leader, Consul
	// was rate-limiting (429), or a read failed.
	KindUnavailable
	// KindRefused: Consul refused the request as malformed or too large
	// (400, 413); retrying the same request fails the same way.
	KindRefused
	// KindPermission: an ACL refusal (403, or Consul's permission texts).
	KindPermission
	// KindOutcomeUnknown: a write was sent and no answer came back (the
	// connection broke, the request timed out, or a server error while
	// applying it): it may or may not have been applied.
	KindOutcomeUnknown
)

func (k Kind) String() string {
	switch k {
	case KindUnavailable:
		return "unavailable"
	case KindRefused:
		return "refused"
	case KindPermission:
		return "permission denied"
	case KindOutcomeUnknown:
		return "outcome unknown"
	}
	return "other"
}

// Classify says what err, from a call that carried a write or not, means.
// It reads the HTTP status where there is one, and only then texts.
// A done context is the caller's to tell apart (see CallerCause). A nil
// err is KindOther: there is nothing to classify.
func Classify(err error, write bool) Kind {
	if err == nil {
		return KindOther
	}
	var se api.StatusError
	if errors.As(err, &se) {
		switch {
		case se.Code == http.StatusForbidden || IsPermission(se.Body):
			return KindPermission
		case se.Code == http.StatusBadRequest || se.Code == http.StatusRequestEntityTooLarge:
			return KindRefused
		case se.Code == http.StatusTooManyRequests || notApplied(se.Body):
			return KindUnavailable
		case se.Code >= 500 && write:
			// The leader may have lost leadership after appending the
			// entry: it may yet be committed.
			return KindOutcomeUnknown
		case se.Code >= 500:
			return KindUnavailable
		default:
			return KindOther
		}
	}
	var op *net.OpError
	switch {
	case IsPermission(err.Error()):
		return KindPermission
	case errors.As(err, &op) && op.Op == "dial":
		return KindUnavailable // refused, no route: the request never left
	case write:
		// A broken connection, a timeout, a truncated answer: the write
		// may have reached the servers.
		return KindOutcomeUnknown
	default:
		return KindUnavailable
	}
}

// notApplied reports a 5xx answer that Consul gives before a write
// reaches the Raft log.
func notApplied(body string) bool {
	return strings.Contains(body, "No cluster leader") || strings.Contains(body, "rate limit")
}

// IsPermission reports Consul's texts for an ACL refusal.
func IsPermission(s string) bool {
	return strings.Contains(s, "Permission denied") || strings.Contains(s, "ACL not found") || strings.Contains(s, "token not found")
}

// Detail is err as an error message tail: "HTTP 500: body" for an answer,
// err's own text otherwise.
func Detail(err error) string {
	var se api.StatusError
	if errors.As(err, &se) {
		return fmt.Sprintf("HTTP %d: %s", se.Code, se.Body)
	}
	return err.Error()
}

// Refusal is why one operation of a rolled-back transaction failed.
type Refusal int

const (
	RefusedOther       Refusal = iota
	RefusedHeld                // lock held by another session
	RefusedLockDelay           // key in lock-delay after an invalidation
	RefusedNotHeld             // unlock of a key the session does not hold
	RefusedBadSession          // the session does not exist
	RefusedPermission          // ACL
	RefusedStaleIndex          // a check-and-set lost
	RefusedKeyMissing          // a get (or check) of a missing key
	RefusedCheckFailed         // a check-session or check-index that did not match
)

// ClassifyRefusal reads Consul's TxnError text (agent/consul/state/txn.go
// and txn_endpoint.go in 1.14; the texts have been stable since 0.7). The
// in-memory twin (internal/harness/consulkvtest) produces the same texts;
// its conformance test holds both to them.
func ClassifyRefusal(what string) Refusal {
	switch {
	case strings.Contains(what, "lock is already held"):
		return RefusedHeld
	case strings.Contains(what, "due to lock delay"):
		return RefusedLockDelay
	case strings.Contains(what, "lock isn't held"):
		return RefusedNotHeld
	case strings.Contains(what, "invalid session") || strings.Contains(what, "missing session"):
		return RefusedBadSession
	case IsPermission(what):
		return RefusedPermission
	case strings.Contains(what, "index is stale"):
		return RefusedStaleIndex
	case strings.Contains(what, "doesn't exist"):
		return RefusedKeyMissing
	case strings.Contains(what, "failed session check") || strings.Contains(what, "failed index check"):
		return RefusedCheckFailed
	default:
		return RefusedOther
	}
}

// Rollback describes the errors of a rolled-back transaction, one
// "op N: text" per operation, for a message.
func Rollback(errs api.TxnErrors) []string {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = fmt.Sprintf("op %d: %s", e.OpIndex, e.What)
	}
	return msgs
}

// PermissionRefusal returns the first operation refused for lack of
// permission, if any.
func PermissionRefusal(errs api.TxnErrors) (string, bool) {
	for _, e := range errs {
		if ClassifyRefusal(e.What) == RefusedPermission {
			return e.What, true
		}
	}
	return "", false
}

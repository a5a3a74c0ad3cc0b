package shard

import "errors"

// Sentinel errors. Implementations wrap them with %w and the offending value;
// compare with errors.Is.
var (
	// ErrInvalidPolicy: a LeasePolicy breaks 2·RenewEvery + PauseBudget ≤ TTL.
	ErrInvalidPolicy = errors.New("shard: invalid lease policy")
	// ErrInvalidConfig: a fleet Config has an impossible shard count or name.
	ErrInvalidConfig = errors.New("shard: invalid fleet config")
	// ErrConfigMismatch: the fleet's stored Config differs from the one a
	// worker brought. The worker must not start.
	ErrConfigMismatch = errors.New("shard: fleet config mismatch")
	// ErrSessionInvalid: the session does not exist any more (expired,
	// destroyed, or never created). Everything it held is gone.
	ErrSessionInvalid = errors.New("shard: session invalid")
	// ErrMemberExists: another live session already registered this worker ID.
	ErrMemberExists = errors.New("shard: worker id already registered by a live session")
	// ErrUnknownShard: a shard ID is not part of the fleet's shard set.
	ErrUnknownShard = errors.New("shard: unknown shard")
	// ErrInvalidArgument: an empty worker ID, non-positive TTL, and the like.
	ErrInvalidArgument = errors.New("shard: invalid argument")
	// ErrUnavailable: the coordinator could not be reached or answered with a
	// transient failure; the call may be retried.
	ErrUnavailable = errors.New("shard: coordinator unavailable")
	// ErrPermissionDenied: the coordinator refused a call for lack of
	// permission (an ACL). It is not transient: retrying with the same
	// credentials fails the same way, so a worker stops instead.
	ErrPermissionDenied = errors.New("shard: permission denied")
	// ErrNotAssignor: an Assign was refused because the session does not
	// hold P/assignor at the epoch given (it never held it, it lost it with
	// its session or released it, another session took it, or it holds it at a
	// later epoch). Nothing of the refused transaction was written. The
	// caller is not the assignor: it stops assigning and campaigns again.
	ErrNotAssignor = errors.New("shard: not the assignor")
	// ErrNotMember: a ReportLoad was refused because the session does not
	// hold the worker's member key (the key is missing, dead, or held by
	// another session: the worker is not registered under it). Nothing was
	// written. A worker that sees it registers again (or has lost its term).
	ErrNotMember = errors.New("shard: session does not hold the worker's member key")
	// ErrKeyHeld: a delete of a free shard key was refused because a
	// session holds the key (it was acquired after the caller looked).
	// Nothing was deleted.
	ErrKeyHeld = errors.New("shard: shard key held by a session")
	// ErrConfigChanged: the fleet's config changed between the read a
	// change was decided from and its write (Fleet.SetLayouts); nothing
	// was written.
	ErrConfigChanged = errors.New("shard: fleet config changed")
)

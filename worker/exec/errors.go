package exec

import "errors"

// Sentinel errors; compare with errors.Is.
var (
	// ErrInvalidConfig: a Config field is wrong; the message lists each.
	ErrInvalidConfig = errors.New("exec: invalid config")
	// ErrChildExited: a child exited while its shard was still owned.
	ErrChildExited = errors.New("exec: child exited while its shard is owned")
)

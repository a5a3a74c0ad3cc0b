package worker

import "errors"

// Sentinel errors; compare with errors.Is. The causes of shard contexts wrap
// ErrRevoked or ErrLost with details.
var (
	// ErrRevoked: the shard is being handed off gracefully.
	ErrRevoked = errors.New("worker: shard revoked")
	// ErrLost: the worker's authority over the shard is gone.
	ErrLost = errors.New("worker: shard lost")
	// ErrInvalidConfig: a Config field is wrong; the message lists each.
	ErrInvalidConfig = errors.New("worker: invalid config")
	// ErrAlreadyRunning: Run was called twice on one Worker.
	ErrAlreadyRunning = errors.New("worker: already running")
	// ErrNotJoined: Run gave up after Config.StartTimeout without joining
	// the fleet (an unreachable coordinator, a duplicate worker ID); the
	// message says what it was waiting on.
	ErrNotJoined = errors.New("worker: not joined the fleet")
)

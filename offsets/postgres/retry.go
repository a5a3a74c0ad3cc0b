package postgres

import (
	"context"
	"math/rand/v2"
	"time"
)

// maxTries bounds the retries of one call. They cover a connection found
// dead in the pool after a server restart, and a serialisation failure;
// anything longer is for the caller to decide.
const maxTries = 3

// retry reports whether try (0-based) may be followed by another, and if so
// waits a jittered, growing delay first (or until ctx ends). Only attempts
// that provably changed nothing are retried: never one whose outcome is
// unknown.
func retry(ctx context.Context, try int, err error, a attempt) bool {
	if try >= maxTries || ctx.Err() != nil {
		return false
	}
	if a != notSent && !(a == refused && transient(err)) {
		return false
	}
	base := 20 * time.Millisecond << try
	d := base/2 + rand.N(base) // half to one and a half times base
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

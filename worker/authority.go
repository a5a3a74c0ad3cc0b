package worker

import (
	"context"
	"fmt"
	"time"
)

// authority is one claim's right to act for its shard. It is separate from
// the handler's context because a context's cause cannot change: a handler
// revoked for a hand-off (cause ErrRevoked) that is still draining when the
// authority ends must still be told, and its commits refused.
//
// Authority ends, with a cause wrapping ErrLost, at the term's local
// deadline (its context derives from the lease's), when the shard is found
// held by someone else, or when a revoked handler overruns the drain
// timeout. err also reads the clock, so a process that was paused across
// the deadline sees the loss on its first check after waking, even before
// the lease's timer has run.
type authority struct {
	ctx   context.Context
	end   context.CancelCauseFunc
	lease *lease
}

func newAuthority(l *lease) *authority {
	ctx, end := context.WithCancelCause(l.ctx)
	return &authority{ctx: ctx, end: end, lease: l}
}

// err is nil while the claim may act, and the reason it may not otherwise.
func (a *authority) err() error {
	if a.ctx.Err() == nil {
		a.lease.endIfPast(time.Now())
	}
	if a.ctx.Err() != nil {
		return context.Cause(a.ctx)
	}
	return nil
}

// lose ends the authority with ErrLost and why (a no-op once ended).
func (a *authority) lose(why string) { a.end(fmt.Errorf("%w: %s", ErrLost, why)) }

package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Authority is one holder's right to act under a lease: a worker's claim
// on a shard, an election's term. It is separate from the holder's own
// context because a context's cause cannot change: a holder revoked for a
// hand-off (its context's cause says so) that is still draining when its
// authority ends must still be told, and its commits refused.
//
// Authority ends, with a cause wrapping the lease's Config.Lost, at the
// lease's local deadline (its context derives from the lease's), or when
// its owner says so (Lose, End). Err also reads the clock, so a process
// that was paused across the deadline sees the loss on its first check
// after waking, even before the lease's timer has run.
type Authority struct {
	ctx   context.Context
	end   context.CancelCauseFunc
	lease *Lease
}

// NewAuthority starts an authority under l.
func NewAuthority(l *Lease) *Authority {
	ctx, end := context.WithCancelCause(l.ctx)
	return &Authority{ctx: ctx, end: end, lease: l}
}

// Context is cancelled, with the cause, when the authority ends.
func (a *Authority) Context() context.Context { return a.ctx }

// Err is nil while the holder may act, and the reason it may not otherwise.
func (a *Authority) Err() error {
	if a.ctx.Err() == nil {
		a.lease.endIfPast(time.Now())
	}
	if a.ctx.Err() != nil {
		return context.Cause(a.ctx)
	}
	return nil
}

// Deadline is the lease's local deadline as it stands: the authority ends
// then unless a renewal moves it later (it may end sooner: Lose, End, the
// session's end).
func (a *Authority) Deadline() time.Time { return a.lease.deadline() }

// Lose ends the authority with the lease's loss sentinel and why (a no-op
// once ended).
func (a *Authority) Lose(why string) { a.end(fmt.Errorf("%w: %s", a.lease.cfg.Lost, why)) }

// End ends the authority with cause (a no-op once ended).
func (a *Authority) End(cause error) { a.end(cause) }

// Commit stores offset for id with token while the authority lasts. It
// refuses at once, without reaching the store, once the authority has
// ended (see Err), and cancels the store call if the authority ends while
// it is in flight; lost reports either, and the error then carries the
// authority's cause. Otherwise it returns what the store returns: an error
// wrapping offsets.ErrStaleToken once a newer holder has fenced id.
func (a *Authority) Commit(ctx context.Context, store offsets.Store, id shard.ID, token shard.Token, offset int64) (lost bool, err error) {
	return a.Do(ctx, func(ctx context.Context) error { return store.Commit(ctx, id, token, offset) })
}

// Do runs write, a fenced write to a store (Commit's, or the user's own
// fenced transaction), while the authority lasts, as Commit does: refused
// at once once the authority has ended, its context cancelled if the
// authority ends while it runs.
func (a *Authority) Do(ctx context.Context, write func(context.Context) error) (lost bool, err error) {
	if err := a.Err(); err != nil {
		return true, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(a.ctx, func() { cancel(context.Cause(a.ctx)) })
	defer stop()
	err = write(ctx)
	if err != nil && !errors.Is(err, offsets.ErrStaleToken) && a.ctx.Err() != nil {
		// Cancelled because the authority ended meanwhile: say so, not
		// only that a context was cancelled. Whether the write landed is
		// unknown; the next holder's fence settles it.
		return true, fmt.Errorf("%w; the commit in flight was cancelled and may or may not have landed: %w", context.Cause(a.ctx), err)
	}
	return false, err
}

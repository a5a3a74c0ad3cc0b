package consulkv

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// TimeoutError is the cause of a context ended by WithRequestTimeout: the
// request, not the caller, gave up.
type TimeoutError struct {
	// After is the bound that passed.
	After time.Duration
}

func (e *TimeoutError) Error() string { return fmt.Sprintf("no answer within %v", e.After) }

// Is makes a TimeoutError match context.DeadlineExceeded, which is what
// it is.
func (e *TimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// WithRequestTimeout bounds one request by d on top of ctx. Its cause,
// once it ends by d, is a *TimeoutError, so a backend needs no second
// context to tell its own timeout from its caller's end (CallerCause).
func WithRequestTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, &TimeoutError{After: d})
}

// CallerCause returns why ctx ended if its caller ended it (cancelled, or
// its own deadline), and nil while it is live or when only a
// WithRequestTimeout bound passed.
func CallerCause(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	var te *TimeoutError
	if errors.As(cause, &te) {
		return nil
	}
	return cause
}

// TimedOut returns the bound that ended ctx, if a WithRequestTimeout
// bound did.
func TimedOut(ctx context.Context) (time.Duration, bool) {
	if ctx.Err() == nil {
		return 0, false
	}
	var te *TimeoutError
	if errors.As(context.Cause(ctx), &te) {
		return te.After, true
	}
	return 0, false
}

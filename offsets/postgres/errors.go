package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Sentinel errors; compare with errors.Is.
var (
	// ErrUnavailable is offsets.ErrUnavailable: the database could not be
	// reached, refused the login, or failed the statement for a transient
	// reason. Nothing was written; the call may be retried.
	ErrUnavailable = offsets.ErrUnavailable
	// ErrOutcomeUnknown is offsets.ErrOutcomeUnknown: the connection broke
	// (or the context ended) after a write was sent and before its answer
	// came back. The write may or may not have been applied. Retrying a
	// Commit or Fence with the same token is safe (an equal token may
	// overwrite); a FencedTx must be checked against the user's own data
	// before it is run again.
	ErrOutcomeUnknown = offsets.ErrOutcomeUnknown
	// ErrSchema: the table exists but is not one this store can use (wrong
	// columns, no unique index on shard, a newer schema version).
	ErrSchema = errors.New("offsets/postgres: incompatible table")
	// ErrCorrupt is offsets.ErrCorrupt: a row breaks the offsets rule
	// (negative offset, token above floor, floor 0); reported, never
	// obeyed.
	ErrCorrupt = offsets.ErrCorrupt
)

// attempt is what one try of a statement told us.
type attempt int

const (
	notSent attempt = iota // failed before anything reached the server: retry is safe
	refused                // the server answered with an error: nothing was applied
	unknown                // sent, then the connection broke: applied or not
)

// classify says what err means for a statement that writes. An error from
// acquiring a connection never reaches here as "sent": callers pass
// sent=false for those.
func classify(err error, sent bool) attempt {
	var pe *pgconn.PgError
	switch {
	case !sent || pgconn.SafeToRetry(err):
		return notSent
	case errors.As(err, &pe):
		// The server ran and failed the statement (or its transaction):
		// an autocommit statement that fails is rolled back.
		return refused
	default:
		return unknown
	}
}

// commitAttempt is classify for the COMMIT of a FencedTx. pgx (v5.12)
// reports a connection that broke while COMMIT awaited its answer as "conn
// closed" (pgconn.ErrConnClosed), an error it calls safe to retry, as if
// nothing had been sent; but the COMMIT was sent and may have been applied.
// (Were the connection closed before COMMIT, by a failure fn did not
// return, nothing would be committed: "unknown" is then merely cautious.)
func commitAttempt(err error) attempt {
	if errors.Is(err, pgconn.ErrConnClosed) {
		return unknown
	}
	return classify(err, true)
}

// transient reports whether a server error is worth retrying: the statement
// was rolled back for a reason that another try may not meet.
func transient(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	switch {
	case pe.Code == "40001", pe.Code == "40P01": // serialization failure, deadlock
		return true
	case strings.HasPrefix(pe.Code, "08"): // connection exception
		return true
	case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // admin/crash shutdown, cannot connect now
		return true
	}
	return false
}

func isServerError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}

// explain adds what a user can do to the server errors they will meet.
func (st *Store) explain(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return ""
	}
	switch pe.Code {
	case "42P01":
		return fmt.Sprintf(" (table %s is gone: dropped after Open?)", st.table)
	case "42501":
		return fmt.Sprintf(" (the role needs SELECT, INSERT and UPDATE on %s)", st.table)
	case "25P03":
		return " (the fenced transaction was silent longer than the store's MaxHold, and the server ended it: raise MaxHold, or do slow work outside the transaction)"
	case "25006":
		return " (a read-only server: is the DSN pointing at a standby?)"
	case "28P01", "28000":
		return " (check the user and password in the DSN)"
	case "3D000":
		return " (create the database, or fix its name in the DSN)"
	}
	return ""
}

// fail builds the error for a failed operation. op and s say what failed;
// a is what the failure means for a write (reads pass notSent or refused).
func (st *Store) fail(ctx context.Context, op string, s shard.ID, err error, a attempt) error {
	where := fmt.Sprintf("offsets/postgres: %s shard %s at %s", op, s, st.dsn)
	if s == "" {
		where = fmt.Sprintf("offsets/postgres: %s at %s", op, st.dsn)
	}
	if ctx.Err() != nil {
		err = ctxError(ctx, err)
	}
	switch {
	case a == unknown && ctx.Err() != nil:
		return fmt.Errorf("%w: %s: the context ended after the write was sent, so it may or may not have been applied: %w", ErrOutcomeUnknown, where, err)
	case a == unknown:
		return fmt.Errorf("%w: %s: the connection failed after the write was sent, so it may or may not have been applied: %w", ErrOutcomeUnknown, where, err)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: not applied: %w", where, err)
	case a == notSent || transient(err) || !isServerError(err):
		// Not sent, rolled back for a passing reason, or a connection
		// that broke before anything could be committed.
		return fmt.Errorf("%w: %s: %w%s", ErrUnavailable, where, err, st.explain(err))
	default:
		return fmt.Errorf("%s: %w%s", where, err, st.explain(err))
	}
}

// ctxError makes sure an error caused by a done context says so, with the
// context's cause, so a handler can tell revoked from lost.
func ctxError(ctx context.Context, err error) error {
	if errors.Is(err, ctx.Err()) {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
			return fmt.Errorf("%w: %w", err, cause)
		}
		return err
	}
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		return fmt.Errorf("%w: %w: %w", err, ctx.Err(), cause)
	}
	return fmt.Errorf("%w: %w", err, ctx.Err())
}

// ctxErr reports a done context before any I/O, with its cause.
func ctxErr(ctx context.Context, op string, s shard.ID) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("offsets/postgres: %s shard %s: %w: %w", op, s, err, cause)
	}
	return fmt.Errorf("offsets/postgres: %s shard %s: %w", op, s, err)
}

package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// FencedTx runs fn in a transaction that commits only together with a
// successful token check on shard s: the user's own writes are fenced like
// the offsets are.
//
// The transaction's first statement is Fence(s, token) (the same
// conditional upsert): it raises the shard's floor to token, or finds token
// below the floor and stops with a *offsets.StaleTokenError before fn runs.
// Either way it locks the shard's row until the transaction ends, so a
// newer owner's Fence or Commit waits for this transaction and then sees
// its floor; this transaction can no longer be overtaken. (If this owner
// vanishes, the server ends the transaction about Config.MaxHold after it
// last heard from it, freeing the row: see the package doc.) Then fn runs
// with the transaction, then it commits. So the user's statements are
// committed if and only if the token was not stale, atomically.
//
// fn runs once; it is not retried. If fn returns an error the transaction is
// rolled back and that error returned as is. Use CommitTx inside fn to
// commit the shard's offset in the same transaction as the data it
// accounts for (exactly-once processing). fn must not commit or roll back
// the transaction itself.
//
// A failure of the final COMMIT whose outcome cannot be known (the
// connection broke after COMMIT was sent) wraps ErrOutcomeUnknown: check
// the user's data before running the work again.
func (st *Store) FencedTx(ctx context.Context, s shard.ID, token shard.Token, fn func(pgx.Tx) error) error {
	return st.FencedTxWith(ctx, pgx.TxOptions{}, s, token, fn)
}

// FencedTxWith is FencedTx with the transaction's options (isolation level,
// say). A read-only transaction cannot raise the floor and is refused.
func (st *Store) FencedTxWith(ctx context.Context, opts pgx.TxOptions, s shard.ID, token shard.Token, fn func(pgx.Tx) error) error {
	if _, err := offsets.ApplyFence(offsets.Checkpoint{}, s, token); err != nil {
		return err
	}
	if err := st.check(ctx, "fenced transaction", s, token); err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("offsets/postgres: fenced transaction on shard %s: nil function: %w", s, shard.ErrInvalidArgument)
	}
	if opts.AccessMode == pgx.ReadOnly {
		return fmt.Errorf("offsets/postgres: fenced transaction on shard %s: a read-only transaction cannot take the fence: %w", s, shard.ErrInvalidArgument)
	}
	const op = "fenced transaction"
	tx, err := st.pool.BeginTx(ctx, opts)
	if err != nil {
		if st.closed.Load() {
			return offsets.ErrClosed
		}
		return st.fail(ctx, op, s, err, notSent)
	}
	committed := false
	defer func() {
		if !committed {
			// Bounded: on a blackholed connection a rollback would otherwise
			// wait for the client's TCP to give up, long after the server
			// ended the transaction itself (MaxHold).
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), st.maxHold)
			_ = tx.Rollback(rctx)
			cancel()
		}
	}()

	tag, err := st.fenceInTx(ctx, tx, s, token)
	if err != nil {
		return st.fail(ctx, op, s, err, refused) // nothing is committed before COMMIT
	}
	if tag.RowsAffected() != 1 {
		// Refused. The row is locked by this transaction now, so the floor
		// read here is the one the check saw.
		floor, err := st.floor(ctx, tx, s)
		if err != nil {
			return fmt.Errorf("offsets/postgres: %s on shard %s: refused (token %d below the floor), and reading the floor failed: %w", op, s, token, err)
		}
		return &offsets.StaleTokenError{Shard: s, Token: token, Floor: floor}
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		committed = true // nothing left to roll back: the connection is gone or the server decided
		if errors.Is(err, pgx.ErrTxClosed) {
			return fmt.Errorf("offsets/postgres: %s on shard %s: the function committed or rolled back the transaction itself; it must leave that to FencedTx: %w",
				op, s, err)
		}
		if errors.Is(err, pgx.ErrTxCommitRollback) {
			return fmt.Errorf("offsets/postgres: %s on shard %s: rolled back at COMMIT because a statement of the function failed (and its error was not returned): %w",
				op, s, err)
		}
		return st.fail(ctx, op+" commit", s, err, commitAttempt(err))
	}
	committed = true
	return nil
}

// fenceInTx sets the transaction's hold limits (holdSettings), then runs
// the fence, in one round trip. The limits come first: from the fence on,
// the transaction holds the shard's row.
func (st *Store) fenceInTx(ctx context.Context, tx pgx.Tx, s shard.ID, token shard.Token) (pgconn.CommandTag, error) {
	var b pgx.Batch
	b.Queue(holdSQL(st.hold, serverMajor(tx.Conn().PgConn().ParameterStatus("server_version"))))
	b.Queue(st.sql.fence, s, int64(token))
	br := tx.SendBatch(ctx, &b)
	var tag pgconn.CommandTag
	_, err := br.Exec()
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// CommitTx commits offset for shard s inside tx, the caller's transaction
// (typically the one FencedTx passes to its function), with the same
// conditional upsert as Commit: it becomes visible only if and when tx
// commits. A stale token gives a *offsets.StaleTokenError, and the caller
// should then let its transaction roll back.
func (st *Store) CommitTx(ctx context.Context, tx pgx.Tx, s shard.ID, token shard.Token, offset int64) error {
	if _, err := offsets.ApplyCommit(offsets.Checkpoint{}, s, token, offset); err != nil {
		return err
	}
	if err := st.check(ctx, "commit in transaction", s, token); err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, st.sql.commit, s, offset, int64(token))
	if err != nil {
		return st.fail(ctx, "commit in transaction", s, err, refused)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	floor, err := st.floor(ctx, tx, s)
	if err != nil {
		return fmt.Errorf("offsets/postgres: commit in transaction on shard %s: refused (token %d below the floor), and reading the floor failed: %w", s, token, err)
	}
	return &offsets.StaleTokenError{Shard: s, Token: token, Floor: floor}
}

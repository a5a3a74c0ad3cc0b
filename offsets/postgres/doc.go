// Package postgres is the offsets.Store in a PostgreSQL table, for fleets
// that keep their state in PostgreSQL, and a fenced transaction that lets
// the user's own writes carry the same token check as the offsets.
//
// # What it guarantees
//
// The offsets rule (see package offsets), with the token check and the write
// in one statement, a conditional upsert:
//
//	INSERT INTO shardlease_offsets AS o (shard, shard_offset, token, floor, updated_at)
//	VALUES ($1, $2, $3, $3, now())
//	ON CONFLICT (shard) DO UPDATE SET shard_offset = excluded.shard_offset, token = excluded.token,
//	    floor = excluded.floor, updated_at = excluded.updated_at
//	WHERE o.floor <= excluded.floor
//
// ON CONFLICT DO UPDATE locks the shard's row and evaluates the WHERE against
// its latest committed version, so concurrent writers are serialised and a
// lower token can never overwrite a higher one. A refused write changes no
// row; only then is the floor read, to name it in the *offsets.StaleTokenError.
// Fence is the same statement setting only the floor. CommitBatch sends
// many shards as one such statement (unnest of arrays), one round trip,
// each row checked on its own. A Commit, Fence or CommitBatch that returned
// nil has been committed by the server with its configured durability
// (synchronous_commit on, the default, means flushed to the WAL).
//
// FencedTx runs the user's statements in a transaction whose first statement
// is that Fence: the user's writes commit only together with a successful
// token check, and the shard's row stays locked until the transaction ends,
// so no newer owner can fence in between. CommitTx adds the offset commit to
// the same transaction.
//
// The table (default shardlease_offsets, configurable, optionally
// schema-qualified) holds one row per shard fenced or committed:
//
//	shard text PRIMARY KEY, shard_offset bigint, token bigint, floor bigint, updated_at timestamptz
//
// with CHECKs for the rule's impossible states. Open creates it if missing,
// under an advisory lock so that many workers starting at once create it
// once, and records its version in shardlease_schema (same schema). A table
// that exists without the columns the statements need, or recorded with a
// newer version, is refused with ErrSchema naming every difference.
//
// # What it does not guarantee
//
// Tokens above math.MaxInt64 (a bigint) are refused; Consul's indexes stay
// far below. The fence covers writes through this store and inside FencedTx
// only. The store does not retry a write whose outcome is unknown: it says
// so (ErrOutcomeUnknown) and leaves the decision to the caller; for Commit
// and Fence a retry with the same token is always safe. FencedTx runs its
// function once.
//
// # How it fails
//
//   - Open: a malformed DSN wraps shard.ErrInvalidArgument; an unreachable
//     server, a refused login or a missing database wraps ErrUnavailable;
//     an incompatible table wraps ErrSchema. Every message names the DSN
//     with its password replaced by xxxxx (RedactDSN).
//   - the errors of package offsets, with the same wording; after Close,
//     offsets.ErrClosed. Shard IDs that are not valid UTF-8, contain NUL or
//     are longer than MaxShardLen wrap shard.ErrInvalidArgument.
//   - ErrUnavailable: nothing was written (the statement was never sent,
//     or the server rolled it back for a transient reason); calls that
//     provably changed nothing are retried up to three times with jittered
//     backoff first, which rides over a connection found dead after a
//     server restart.
//   - ErrOutcomeUnknown: the connection broke after a write was sent: it
//     may or may not be committed. Never reported as success, never as
//     failure. A context that ends during a statement does not leave the
//     outcome unknown on a pool Open made: the statement is cancelled on the
//     server and its answer awaited (up to 5 s), so the write was either
//     rolled back ("not applied") or completed; dropping the connection
//     instead would leave the statement running, to land after the
//     caller's next commit with the same token and overwrite it. A Pool of
//     the caller's keeps pgx's default (drop the connection), so there a
//     context that ends after the write was sent is ErrOutcomeUnknown.
//   - a context done before the call: its error and cause, nothing sent.
//   - ErrCorrupt: a row that breaks the rule (possible only in a table made
//     without the CHECKs) is reported for its shard, not obeyed.
package postgres

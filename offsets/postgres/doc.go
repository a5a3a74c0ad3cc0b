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
// A FencedTx whose owner vanishes (powered off, cut off by the network, its
// process killed) does not keep that row for long: the transaction sets,
// for itself only (SET LOCAL), limits derived from Config.MaxHold (default
// DefaultMaxHold, 2.5 s, the step-down deadline of shard.DefaultPolicy), and
// the server rolls it back about MaxHold after it last heard from the
// client, whatever its backend was doing:
//
//   - waiting for the next statement: idle_in_transaction_session_timeout
//     = MaxHold;
//   - sending a result the client no longer acknowledges: tcp_user_timeout
//     = MaxHold;
//   - running a statement: keepalive probes after max(1 s, MaxHold/4) of
//     silence (tcp_keepalives_idle, _interval, _count), the dead peer
//     declared by tcp_user_timeout, and noticed by the running statement
//     within a probe interval (client_connection_check_interval); a closed
//     connection (a killed process) is noticed within that interval.
//
// A newer owner's Fence, which waits for the row, then gets in. Measured
// against PostgreSQL 15 with MaxHold 2 s (TestFencedTxOwnerBlackholedIdle,
// …Sending, TestFencedTxOwnerDiesMidStatement): after 2.0 s, 2.2–2.6 s and
// 1.0 s. With MaxHold at most the workers' step-down deadline
// (shard.LeasePolicy.StepDownAfter), a vanished owner's idle or sending
// transaction has been ended before the lease can pass to a new owner (no
// sooner than TTL + lock-delay after the old owner's last renewal), so the
// new owner's Fence does not wait at all.
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
// The bound on a vanished owner's FencedTx stops where these limits do:
//
//   - It counts from the last message the server had from the client: an
//     owner that vanishes mid-statement, behind a blackhole, holds the row
//     until keepalive declares it dead and the statement notices: up to
//     MaxHold plus two probe intervals after its last packet.
//   - Detection mid-statement and mid-send needs TCP (not a unix socket) and
//     a Linux server (tcp_user_timeout; on a full receive window, Linux 5.11
//     or later); elsewhere the keepalive count decides (within MaxHold, 2 s
//     at least) and a blocked send waits for the kernel's retransmissions to
//     give up. Servers before 14 lack client_connection_check_interval (a
//     statement whose client vanished runs to its end), before 12 also
//     tcp_user_timeout. Behind a pooler (PgBouncer) the TCP limits apply to
//     the pooler's connection, not the owner's: only the idle limit works.
//   - Row locks taken otherwise — CommitTx in a transaction of the caller's,
//     the caller's own statements through Pool, a SELECT … FOR UPDATE by
//     hand — carry no limit. A Fence waits for them until its context ends
//     and then returns an error (the statement cancelled on the server).
//   - The price: a live owner's FencedTx that stays silent longer than
//     MaxHold (slow work between two statements) or leaves a result unread
//     that long is ended by the server, and fails with nothing committed.
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
//   - a FencedTx ended by the server for staying silent longer than
//     MaxHold fails with its SQLSTATE 25P03, saying so; nothing of it is
//     committed.
//   - ErrCorrupt: a row that breaks the rule (possible only in a table made
//     without the CHECKs) is reported for its shard, not obeyed.
package postgres

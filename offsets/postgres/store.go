package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// MaxShardLen bounds a shard ID in bytes: a btree index entry must fit in
// a third of a page, and an ID that long is a bug, not a shard.
const MaxShardLen = 1024

// Store is an offsets.Store in a PostgreSQL table. Create it with Open; the
// zero value is not usable. All methods are safe for concurrent use.
type Store struct {
	pool     *pgxpool.Pool
	ownsPool bool
	name     tableName
	table    string // quoted, ready for SQL
	dsn      string // redacted, for errors
	closed   atomic.Bool
	sql      statements
	hold     []setting // what FencedTx sets for itself (holdSettings of Config.MaxHold)
	maxHold  time.Duration
}

var _ offsets.Store = (*Store)(nil)

// statements are the SQL texts for one table, built once.
type statements struct {
	commit, fence, load, batch, floors string
}

func newStatements(table string) statements {
	// The conditional upsert: the token check and the write are one
	// statement. ON CONFLICT DO UPDATE locks the shard's row and evaluates
	// the WHERE against its latest committed version, so two writers are
	// serialised and the lower token loses. A refused write updates no row
	// (RowsAffected 0). The floor is read back only then.
	const upsert = `ON CONFLICT (shard) DO UPDATE SET %s, updated_at = excluded.updated_at WHERE o.floor <= excluded.floor`
	setCommit := "shard_offset = excluded.shard_offset, token = excluded.token, floor = excluded.floor"
	return statements{
		commit: fmt.Sprintf(`INSERT INTO %s AS o (shard, shard_offset, token, floor, updated_at) VALUES ($1, $2, $3, $3, now()) `+upsert,
			table, setCommit),
		fence: fmt.Sprintf(`INSERT INTO %s AS o (shard, shard_offset, token, floor, updated_at) VALUES ($1, 0, 0, $2, now()) `+upsert,
			table, "floor = excluded.floor"),
		load: fmt.Sprintf(`SELECT shard_offset, token, floor FROM %s WHERE shard = $1`, table),
		// Sorted so that concurrent batches lock rows in one order and do
		// not deadlock.
		batch: fmt.Sprintf(`INSERT INTO %s AS o (shard, shard_offset, token, floor, updated_at)
			SELECT b.shard, b.off, b.tok, b.tok, now() FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS b(shard, off, tok)
			ORDER BY b.shard `+upsert+` RETURNING o.shard`, table, setCommit),
		floors: fmt.Sprintf(`SELECT shard, floor FROM %s WHERE shard = ANY($1)`, table),
	}
}

// Open connects (or takes cfg.Pool), makes sure the table exists at this
// code's schema version with the columns it needs, and returns the store.
// It fails at once, naming the DSN (password redacted), when the server
// cannot be reached, refuses the login, the database does not exist, or the
// table is incompatible (ErrSchema). Give ctx a deadline: with none, and no
// connect_timeout in the DSN, a host that drops packets takes the system's
// TCP timeout to fail.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	name, _ := parseTable(cfg.Table)
	maxHold := cfg.MaxHold
	if maxHold == 0 {
		maxHold = DefaultMaxHold
	}
	st := &Store{pool: cfg.Pool, name: name, table: name.ident(name.name), hold: holdSettings(maxHold), maxHold: maxHold}
	st.sql = newStatements(st.table)
	if st.pool == nil {
		st.dsn = RedactDSN(cfg.DSN)
		pc, err := pgxpool.ParseConfig(cfg.DSN)
		if err != nil {
			// pgx's own message repeats the DSN, redacted as best it can;
			// ours names it redacted by RedactDSN and keeps only the reason.
			return nil, fmt.Errorf("%w: offsets/postgres: DSN %s: %s", shard.ErrInvalidArgument, st.dsn, parseReason(err, cfg.DSN))
		}
		pc.ConnConfig.BuildContextWatcherHandler = cancelOnServer
		if st.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
			return nil, fmt.Errorf("offsets/postgres: %s: %w", st.dsn, err)
		}
		st.ownsPool = true
	} else {
		c := cfg.Pool.Config().ConnConfig
		st.dsn = fmt.Sprintf("postgres://%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
	}
	if err := st.pool.Ping(ctx); err != nil {
		st.closePool()
		return nil, st.fail(ctx, "connect", "", err, notSent)
	}
	if err := st.migrate(ctx); err != nil {
		st.closePool()
		if errors.Is(err, ErrSchema) {
			return nil, fmt.Errorf("%w (at %s)", err, st.dsn)
		}
		return nil, st.fail(ctx, "preparing table "+st.name.String(), "", err, refused)
	}
	return st, nil
}

// cancelGrace is how long a statement whose context ended may take to
// answer the server-side cancel before its connection is dropped, and how
// long the read that names a refusal's floor may take after the caller's
// context ended.
const cancelGrace = 5 * time.Second

// cancelOnServer is how the pool's connections react to a context that ends
// during a statement: ask the server to cancel it and wait (up to
// cancelGrace) for its answer, instead of pgx's default of dropping the
// connection at once. Dropping it leaves the statement running on the
// server: an upsert waiting for its row is applied once the row is free,
// after the caller was told "outcome unknown" and may have committed again
// with the same token — and the stale upsert then overwrites that newer,
// acknowledged offset. Waiting for the server makes the outcome known: the
// statement was cancelled (rolled back) or it completed.
func cancelOnServer(c *pgconn.PgConn) ctxwatch.Handler {
	return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: cancelGrace}
}

// parseReason is pgx's parse error without the connection string it
// quotes (ours is named redacted by RedactDSN), and with any other copy of
// the raw DSN masked, so a password cannot leak through it.
func parseReason(err error, dsn string) string {
	msg := err.Error()
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		msg = pe.Error()
		if i := strings.Index(msg, "`: "); i >= 0 {
			msg = msg[i+3:]
		}
	}
	return "cannot parse it: " + strings.ReplaceAll(msg, dsn, RedactDSN(dsn))
}

// Table returns the table the store keeps its offsets in (as configured,
// unquoted).
func (st *Store) Table() string { return st.name.String() }

// Pool returns the connection pool, for statements of the caller's own
// that should share it.
func (st *Store) Pool() *pgxpool.Pool { return st.pool }

// Close closes the pool if Open opened it (waiting for connections in use
// to be released). Later calls return offsets.ErrClosed; closing twice is
// not an error.
func (st *Store) Close() error {
	if st.closed.Swap(true) {
		return nil
	}
	st.closePool()
	return nil
}

func (st *Store) closePool() {
	if st.ownsPool {
		st.pool.Close()
	}
}

// Fence raises the shard's floor to token; see offsets.Store. One
// conditional upsert. It waits for the shard's row while a FencedTx holds
// it: if that transaction's owner vanished, for about the MaxHold of the
// owner's store (see the package doc); for any other lock, until ctx ends,
// and then it returns an error (see "How it fails" for what became of the
// statement).
func (st *Store) Fence(ctx context.Context, s shard.ID, token shard.Token) error {
	if _, err := offsets.ApplyFence(offsets.Checkpoint{}, s, token); err != nil {
		return err // argument errors, worded as in every backend
	}
	if err := st.check(ctx, "fence", s, token); err != nil {
		return err
	}
	return st.write(ctx, "fence", s, token, st.sql.fence, s, int64(token))
}

// Commit stores offset for the shard unless token is below its floor; see
// offsets.Store. One conditional upsert.
func (st *Store) Commit(ctx context.Context, s shard.ID, token shard.Token, offset int64) error {
	if _, err := offsets.ApplyCommit(offsets.Checkpoint{}, s, token, offset); err != nil {
		return err
	}
	if err := st.check(ctx, "commit", s, token); err != nil {
		return err
	}
	return st.write(ctx, "commit", s, token, st.sql.commit, s, offset, int64(token))
}

// check refuses what the table cannot hold and a done context or closed
// store, before any I/O.
func (st *Store) check(ctx context.Context, op string, s shard.ID, token shard.Token) error {
	if err := ctxErr(ctx, op, s); err != nil {
		return err
	}
	if st.closed.Load() {
		return offsets.ErrClosed
	}
	if err := validShard(s); err != nil {
		return err
	}
	if token > math.MaxInt64 {
		return fmt.Errorf("offsets/postgres: shard %s: token %d is above %d, the largest a bigint column holds: %w",
			s, token, int64(math.MaxInt64), shard.ErrInvalidArgument)
	}
	return nil
}

// validShard refuses IDs PostgreSQL text cannot hold as given (NUL, invalid
// UTF-8, which it would reject or which could collide) and absurd lengths.
func validShard(s shard.ID) error {
	switch {
	case !utf8.ValidString(string(s)):
		return fmt.Errorf("offsets/postgres: shard %q is not valid UTF-8: %w", s, shard.ErrInvalidArgument)
	case containsNUL(string(s)):
		return fmt.Errorf("offsets/postgres: shard %q contains a NUL byte: %w", s, shard.ErrInvalidArgument)
	case len(s) > MaxShardLen:
		return fmt.Errorf("offsets/postgres: shard %.40q… is %d bytes, more than %d: %w", s, len(s), MaxShardLen, shard.ErrInvalidArgument)
	}
	return nil
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// write runs one conditional upsert, retrying only attempts that provably
// did not reach the server (or were rolled back for a transient reason). No
// row affected means the WHERE refused it: the floor is read to say why.
func (st *Store) write(ctx context.Context, op string, s shard.ID, token shard.Token, sql string, args ...any) error {
	for try := 0; ; try++ {
		conn, err := st.pool.Acquire(ctx)
		if err != nil {
			if st.closed.Load() {
				return offsets.ErrClosed
			}
			if retry(ctx, try, err, notSent) {
				continue
			}
			return st.fail(ctx, op, s, err, notSent)
		}
		tag, err := conn.Exec(ctx, sql, args...)
		conn.Release()
		if err != nil {
			a := classify(err, true)
			if retry(ctx, try, err, a) {
				continue
			}
			return st.fail(ctx, op, s, err, a)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		// The refusal is certain; the read only names the floor. It runs
		// even if ctx ended meanwhile (a revoked owner's commit often is
		// refused just as its context ends), so that the caller still gets
		// a StaleTokenError, and if it fails anyway the error still says
		// the token is stale.
		readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelGrace)
		cp, err := st.read(readCtx, s)
		cancel()
		if err != nil {
			return fmt.Errorf("offsets/postgres: %s shard %s: %w: token %d refused by the floor, which could not be read: %w",
				op, s, offsets.ErrStaleToken, token, err)
		}
		if floor := cp.Floor; floor > token {
			return &offsets.StaleTokenError{Shard: s, Token: token, Floor: floor}
		}
		// Refused, yet the floor is not above the token: the row was
		// deleted or lowered by hand in between. Floors do not go down on
		// their own; try again against what is there now.
		if try >= maxTries {
			return fmt.Errorf("offsets/postgres: %s shard %s: refused with token %d, but the floor reads %d: is someone editing %s?",
				op, s, token, cp.Floor, st.table)
		}
	}
}

// querier is what floor and load need: the pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// floor reads the shard's floor (0 when it has no row).
func (st *Store) floor(ctx context.Context, q querier, s shard.ID) (shard.Token, error) {
	cp, err := st.loadWith(ctx, q, s)
	return cp.Floor, err
}

// Load returns the shard's checkpoint; the zero Checkpoint for a shard never
// fenced or committed.
func (st *Store) Load(ctx context.Context, s shard.ID) (offsets.Checkpoint, error) {
	if err := ctxErr(ctx, "load", s); err != nil {
		return offsets.Checkpoint{}, err
	}
	if st.closed.Load() {
		return offsets.Checkpoint{}, offsets.ErrClosed
	}
	if err := offsets.ValidShard(s); err != nil {
		return offsets.Checkpoint{}, err
	}
	if err := validShard(s); err != nil {
		return offsets.Checkpoint{}, err
	}
	return st.read(ctx, s)
}

// read loads the checkpoint from the pool, retrying like write does.
func (st *Store) read(ctx context.Context, s shard.ID) (offsets.Checkpoint, error) {
	for try := 0; ; try++ {
		cp, err := st.loadWith(ctx, st.pool, s)
		switch {
		case err == nil || errors.Is(err, ErrCorrupt):
			return cp, err
		case st.closed.Load():
			return offsets.Checkpoint{}, offsets.ErrClosed
		case retry(ctx, try, err, notSent):
			// A read changes nothing, so any failure may be retried: a
			// connection that died with a restarted server, say.
			continue
		}
		a := refused
		if classify(err, true) == notSent {
			a = notSent
		}
		return offsets.Checkpoint{}, st.fail(ctx, "load", s, err, a)
	}
}

func (st *Store) loadWith(ctx context.Context, q querier, s shard.ID) (offsets.Checkpoint, error) {
	var off, tok, floor int64
	err := q.QueryRow(ctx, st.sql.load, s).Scan(&off, &tok, &floor)
	if errors.Is(err, pgx.ErrNoRows) {
		return offsets.Checkpoint{}, nil
	}
	if err != nil {
		return offsets.Checkpoint{}, err
	}
	return decode(s, off, tok, floor)
}

// decode checks what the table's CHECKs already forbid, for tables made by
// someone else without them: a row that breaks the rule is reported, not
// obeyed.
func decode(s shard.ID, off, tok, floor int64) (offsets.Checkpoint, error) {
	var what string
	switch {
	case off < 0:
		what = fmt.Sprintf("negative offset %d", off)
	case tok < 0 || floor < 0:
		what = fmt.Sprintf("negative token %d or floor %d", tok, floor)
	case floor == 0:
		what = "floor 0"
	case tok > floor:
		what = fmt.Sprintf("token %d above floor %d", tok, floor)
	}
	if what != "" {
		return offsets.Checkpoint{}, fmt.Errorf("%w: shard %s: %s", ErrCorrupt, s, what)
	}
	return offsets.Checkpoint{Offset: off, Token: shard.Token(tok), Floor: shard.Token(floor)}, nil
}

package pipeline

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Tables are a run's tables, all in one schema of its own, so runs against
// one database never mix and one DROP SCHEMA removes a run.
type Tables struct {
	// Schema holds them: lowercase letters, digits and underscores.
	Schema string
}

var schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Offsets is the offsets table, as postgres.Config.Table takes it.
func (t Tables) Offsets() string { return t.Schema + ".offsets" }

// effects holds one row per event applied: what the handler's effect is.
// No unique key on (partition, n): a duplicate effect must be countable,
// not turned into a failed transaction, so the proof can tell. Each row
// records the transaction that wrote it (xid), for the order proof.
func (t Tables) effects() pgx.Identifier { return pgx.Identifier{t.Schema, "effects"} }

// txs holds one row per transaction that applied keyed events: its xid
// and the snapshot its first statement ran with, which tells which other
// transactions had committed before it wrote anything (ProveKeys).
func (t Tables) txs() pgx.Identifier { return pgx.Identifier{t.Schema, "txs"} }

// windows holds one row per closed window (Windows): no unique key, so
// that a window written twice is countable.
func (t Tables) windows() pgx.Identifier { return pgx.Identifier{t.Schema, "windows"} }

// plainOffsets is the unfenced pipeline's offsets: the same upsert without
// the token (shardbench's stream-e2e compares the two).
func (t Tables) plainOffsets() string { return pgx.Identifier{t.Schema, "plain_offsets"}.Sanitize() }

// Create makes the schema and the effect tables (the offsets table is made
// by postgres.Open). It needs PostgreSQL 13 or later (xid8, pg_snapshot).
func (t Tables) Create(ctx context.Context, pool *pgxpool.Pool) error {
	if !schemaRE.MatchString(t.Schema) {
		return fmt.Errorf("pipeline: schema %q: want lowercase letters, digits and underscores, not starting with a digit", t.Schema)
	}
	effects := t.effects().Sanitize()
	sql := fmt.Sprintf(`CREATE SCHEMA IF NOT EXISTS %s;
CREATE TABLE IF NOT EXISTS %s (partition int NOT NULL, n bigint NOT NULL, stream_seq bigint NOT NULL,
  token bigint NOT NULL, worker text NOT NULL, published_at timestamptz NOT NULL, applied_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  key_id bigint NOT NULL DEFAULT 0, key_seq bigint NOT NULL DEFAULT 0, xid xid8 NOT NULL DEFAULT pg_current_xact_id());
CREATE INDEX IF NOT EXISTS effects_partition_n ON %s (partition, n);
CREATE TABLE IF NOT EXISTS %s (xid xid8 PRIMARY KEY, snap pg_snapshot NOT NULL);
CREATE TABLE IF NOT EXISTS %s (shard text PRIMARY KEY, "offset" bigint NOT NULL);
CREATE TABLE IF NOT EXISTS %s (partition int NOT NULL, "window" bigint NOT NULL, count bigint NOT NULL, sum bigint NOT NULL,
  last_seq bigint NOT NULL, token bigint NOT NULL, worker text NOT NULL);
CREATE INDEX IF NOT EXISTS windows_partition_window ON %s (partition, "window");`,
		pgx.Identifier{t.Schema}.Sanitize(), effects, effects, t.txs().Sanitize(), t.plainOffsets(), t.windows().Sanitize(), t.windows().Sanitize())
	if _, err := pool.Exec(ctx, sql); err != nil {
		return fmt.Errorf("pipeline: creating the tables in schema %s: %w", t.Schema, err)
	}
	return nil
}

// Drop removes the schema and everything in it.
func (t Tables) Drop(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{t.Schema}.Sanitize()+" CASCADE")
	return err
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// schemaVersion is the layout this code reads and writes. A table recorded
// with a higher version was made by a newer shardlease and is refused rather
// than misread.
const schemaVersion = 1

// createTable is version 1. The CHECKs make the rule's impossible states
// (negative offset, token above floor, no floor) impossible in the table
// too, whoever writes to it.
const createTable = `CREATE TABLE %[1]s (
	shard        text        NOT NULL PRIMARY KEY,
	shard_offset bigint      NOT NULL CHECK (shard_offset >= 0),
	token        bigint      NOT NULL CHECK (token >= 0),
	floor        bigint      NOT NULL CHECK (floor >= 1),
	updated_at   timestamptz NOT NULL DEFAULT now(),
	CHECK (token <= floor)
);
COMMENT ON TABLE %[1]s IS 'shardlease fenced offsets: one row per shard. shard_offset was written by token; floor is the highest token fenced or committed; a write with a token below floor is refused.'`

const createVersionTable = `CREATE TABLE IF NOT EXISTS %s (
	table_name text        NOT NULL PRIMARY KEY,
	version    integer     NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
)`

// column is what the store needs of one column.
type column struct{ name, typ string }

var wantColumns = []column{
	{"shard", "text"},
	{"shard_offset", "bigint"},
	{"token", "bigint"},
	{"floor", "bigint"},
	{"updated_at", "timestamp with time zone"},
}

// migrate makes sure the table exists at schemaVersion and has the columns
// the statements use. One transaction under an advisory lock, so that many
// workers opening the store at once create it once. It creates only what is
// missing, so a role without CREATE can use tables made for it.
func (st *Store) migrate(ctx context.Context) error {
	tx, err := st.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()

	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "shardlease offsets "+st.name.String()); err != nil {
		return err
	}
	vt := st.name.ident(versionTable)
	var haveVT, haveTable bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL`, vt, st.table).
		Scan(&haveVT, &haveTable); err != nil {
		return err
	}
	if !haveVT {
		if _, err := tx.Exec(ctx, fmt.Sprintf(createVersionTable, vt)); err != nil {
			return fmt.Errorf("creating %s: %w", vt, err)
		}
	}
	var version int
	err = tx.QueryRow(ctx, fmt.Sprintf(`SELECT version FROM %s WHERE table_name = $1`, vt), st.name.name).Scan(&version)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		version = 0
	case err != nil:
		return err
	}
	switch {
	case version > schemaVersion:
		return fmt.Errorf("%w: table %s has schema version %d (in %s); this shardlease knows up to %d: upgrade it",
			ErrSchema, st.table, version, vt, schemaVersion)
	case !haveTable:
		if _, err := tx.Exec(ctx, fmt.Sprintf(createTable, st.table)); err != nil {
			return fmt.Errorf("creating %s: %w", st.table, err)
		}
	default:
		// Made by us (version 1) or by someone else (no version): either
		// way it must have what the statements use.
		if err := st.checkColumns(ctx, tx, version); err != nil {
			return err
		}
	}
	if version == 0 {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (table_name, version) VALUES ($1, $2)
			ON CONFLICT (table_name) DO UPDATE SET version = excluded.version`, vt), st.name.name, schemaVersion); err != nil {
			return fmt.Errorf("recording the schema version in %s: %w", vt, err)
		}
	}
	return tx.Commit(ctx)
}

// checkColumns compares an existing table with version 1 and reports every
// difference at once.
func (st *Store) checkColumns(ctx context.Context, tx pgx.Tx, version int) error {
	rows, err := tx.Query(ctx, `
		SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> ''
		FROM pg_attribute a
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, st.table)
	if err != nil {
		return err
	}
	type col struct {
		typ               string
		notNull, default_ bool
	}
	have := map[string]col{}
	var order []string
	for rows.Next() {
		var name string
		var c col
		if err := rows.Scan(&name, &c.typ, &c.notNull, &c.default_); err != nil {
			rows.Close()
			return err
		}
		have[name] = c
		order = append(order, name)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var problems []string
	want := map[string]bool{}
	for _, w := range wantColumns {
		want[w.name] = true
		c, ok := have[w.name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("no column %s (%s)", w.name, w.typ))
		case c.typ != w.typ:
			problems = append(problems, fmt.Sprintf("column %s is %s, want %s", w.name, c.typ, w.typ))
		}
	}
	for _, name := range order {
		if c := have[name]; !want[name] && c.notNull && !c.default_ {
			problems = append(problems, fmt.Sprintf("extra column %s is NOT NULL without a default, so no row could be inserted", name))
		}
	}
	if _, ok := have["shard"]; ok {
		var unique bool
		err := tx.QueryRow(ctx, `
			SELECT EXISTS (
				SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
				WHERE i.indrelid = $1::regclass AND i.indisunique AND i.indnkeyatts = 1
				  AND i.indpred IS NULL AND i.indexprs IS NULL AND a.attname = 'shard')`, st.table).Scan(&unique)
		if err != nil {
			return err
		}
		if !unique {
			problems = append(problems, "no primary key or unique index on (shard) alone")
		}
	}
	if len(problems) == 0 {
		return nil
	}
	who := "it was not created by shardlease (no row in " + st.name.ident(versionTable) + ")"
	if version > 0 {
		who = fmt.Sprintf("it is recorded as schema version %d but was altered", version)
	}
	return fmt.Errorf("%w: table %s cannot hold fenced offsets: %s; %s: drop or rename it, or choose another table",
		ErrSchema, st.table, strings.Join(problems, "; "), who)
}

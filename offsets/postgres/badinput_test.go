package postgres_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shardlease/shardlease/internal/harness/pgtest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
)

func open(ctx context.Context, cfg postgres.Config) (*postgres.Store, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, cfg)
	if err == nil {
		_ = st.Close()
	}
	return st, err
}

// wantErr checks that err wraps want (when set), says every string in
// says, and never shows the secret.
func wantErr(t *testing.T, err, want error, secret string, says ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	t.Logf("error: %v", err)
	if want != nil && !errors.Is(err, want) {
		t.Errorf("error does not wrap %v", want)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error does not say %q", s)
		}
	}
	if secret != "" && strings.Contains(err.Error(), secret) {
		t.Errorf("error shows the password %q", secret)
	}
}

// Every way of pointing the store at the wrong place fails at Open with an
// error that names the place (password redacted) and what was wrong.
func TestOpenBadInput(t *testing.T) {
	srv := pgtest.Shared(t)
	dsn := database(t)
	ctx := t.Context()
	free := "127.0.0.1:1" // nothing listens on port 1
	const secret = "s3cr3t-pw"

	tests := []struct {
		name string
		cfg  postgres.Config
		want error
		says []string
	}{
		{"empty", postgres.Config{}, shard.ErrInvalidArgument, []string{"no DSN"}},
		{"bad port in URL", postgres.Config{DSN: "postgres://u:" + secret + "@localhost:notaport/db"},
			shard.ErrInvalidArgument, []string{"postgres://u:xxxxx@localhost:notaport/db", "cannot parse", "notaport"}},
		{"bad key=value", postgres.Config{DSN: "host=localhost port=abc password=" + secret},
			shard.ErrInvalidArgument, []string{"password=xxxxx", "cannot parse"}},
		{"connection refused", postgres.Config{DSN: "postgres://u:" + secret + "@" + free + "/db?connect_timeout=5"},
			postgres.ErrUnavailable, []string{"postgres://u:xxxxx@" + free + "/db", "refused"}},
		{"wrong password", postgres.Config{DSN: strings.Replace(dsn, srv.Password, secret, 1)},
			postgres.ErrUnavailable, []string{"password authentication failed", "xxxxx", "check the user and password"}},
		{"missing database", postgres.Config{DSN: srv.DSN("no_such_db")},
			postgres.ErrUnavailable, []string{`database "no_such_db" does not exist`, "/no_such_db"}},
		{"uppercase table", postgres.Config{DSN: dsn, Table: "Offsets"}, shard.ErrInvalidArgument, []string{`table "Offsets"`}},
		{"three-part table", postgres.Config{DSN: dsn, Table: "a.b.c"}, shard.ErrInvalidArgument, []string{`table "a.b.c"`}},
		{"injection", postgres.Config{DSN: dsn, Table: "x; drop table y"}, shard.ErrInvalidArgument, []string{`table "x; drop table y"`}},
		{"negative max hold", postgres.Config{DSN: dsn, MaxHold: -5 * time.Second},
			shard.ErrInvalidArgument, []string{"max hold -5s", "between 1s and 1h0m0s", "zero means the default, 2.5s"}},
		{"max hold under a second", postgres.Config{DSN: dsn, MaxHold: 5 * time.Millisecond}, shard.ErrInvalidArgument, []string{"max hold 5ms"}},
		{"max hold of days", postgres.Config{DSN: dsn, MaxHold: 72 * time.Hour}, shard.ErrInvalidArgument, []string{"max hold 72h0m0s"}},
		{"every problem at once", postgres.Config{Table: "Bad", MaxHold: -1},
			shard.ErrInvalidArgument, []string{"no DSN", `table "Bad"`, "max hold -1ns"}},
		{"missing schema", postgres.Config{DSN: dsn, Table: "no_such_schema.offsets"},
			nil, []string{`schema "no_such_schema" does not exist`, "no_such_schema.offsets"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := open(ctx, tt.cfg)
			wantErr(t, err, tt.want, secret, tt.says...)
		})
	}
}

// A table someone else made is used if it has what the statements need,
// and refused, with every difference named, if not.
func TestOpenForeignTable(t *testing.T) {
	srv := pgtest.Shared(t)
	dsn := database(t)
	db := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]
	tests := []struct {
		name, ddl string
		says      []string // empty: must open
	}{
		{"compatible, made by hand",
			`CREATE TABLE %s (shard text PRIMARY KEY, shard_offset bigint NOT NULL, token bigint NOT NULL, floor bigint NOT NULL,
			  updated_at timestamptz NOT NULL DEFAULT now(), note text)`, nil},
		{"wrong columns",
			`CREATE TABLE %s (shard text PRIMARY KEY, "offset" integer NOT NULL, token integer, floor bigint)`,
			[]string{"no column shard_offset (bigint)", "column token is integer, want bigint", "no column updated_at",
				`extra column offset is NOT NULL without a default`, "not created by shardlease"}},
		{"no unique shard",
			`CREATE TABLE %s (shard text, shard_offset bigint, token bigint, floor bigint, updated_at timestamptz)`,
			[]string{"no primary key or unique index on (shard) alone"}},
		{"composite key",
			`CREATE TABLE %s (shard text, shard_offset bigint, token bigint, floor bigint, updated_at timestamptz, PRIMARY KEY (shard, token))`,
			[]string{"no primary key or unique index on (shard) alone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := "foreign_" + randomHex(4)
			srv.Exec(t, db, strings.ReplaceAll(tt.ddl, "%s", table))
			_, err := open(t.Context(), postgres.Config{DSN: dsn, Table: table})
			if len(tt.says) == 0 {
				if err != nil {
					t.Fatalf("a compatible table was refused: %v", err)
				}
				st := openTable(t, dsn, table)
				if err := st.Commit(t.Context(), "s", 1, 5); err != nil {
					t.Fatalf("Commit on the adopted table: %v", err)
				}
				return
			}
			wantErr(t, err, postgres.ErrSchema, "", append(tt.says, table, "drop or rename it")...)
		})
	}

	t.Run("newer version", func(t *testing.T) {
		table := "newer_" + randomHex(4)
		openTable(t, dsn, table)
		srv.Exec(t, db, "UPDATE shardlease_schema SET version = 2 WHERE table_name = $1", table)
		_, err := open(t.Context(), postgres.Config{DSN: dsn, Table: table})
		wantErr(t, err, postgres.ErrSchema, "", "schema version 2", "upgrade")
	})

	t.Run("altered after creation", func(t *testing.T) {
		table := "altered_" + randomHex(4)
		openTable(t, dsn, table)
		srv.Exec(t, db, "ALTER TABLE "+table+" ALTER COLUMN token TYPE numeric")
		_, err := open(t.Context(), postgres.Config{DSN: dsn, Table: table})
		wantErr(t, err, postgres.ErrSchema, "", "column token is numeric, want bigint", "schema version 1 but was altered")
	})

	// A hand-made table without the CHECKs can hold a row that breaks the
	// rule: it is reported for its shard, not obeyed.
	t.Run("corrupt row", func(t *testing.T) {
		table := "corrupt_" + randomHex(4)
		srv.Exec(t, db, "CREATE TABLE "+table+` (shard text PRIMARY KEY, shard_offset bigint NOT NULL, token bigint NOT NULL,
			floor bigint NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())`)
		srv.Exec(t, db, "INSERT INTO "+table+" (shard, shard_offset, token, floor) VALUES ('bad', 5, 9, 3), ('neg', -1, 1, 1)")
		st := openTable(t, dsn, table)
		for id, says := range map[shard.ID]string{"bad": "token 9 above floor 3", "neg": "negative offset -1"} {
			_, err := st.Load(t.Context(), id)
			wantErr(t, err, postgres.ErrCorrupt, "", "shard "+string(id), says)
		}
	})
}

// Values the table cannot hold are refused before anything is sent.
func TestBadArguments(t *testing.T) {
	st := openTable(t, database(t), "args")
	ctx := t.Context()
	long := shard.ID(strings.Repeat("x", postgres.MaxShardLen+1))
	tests := []struct {
		name string
		err  error
		says string
	}{
		{"token above bigint", st.Commit(ctx, "s", math.MaxInt64+1, 1), "token 9223372036854775808 is above 9223372036854775807"},
		{"fence token above bigint", st.Fence(ctx, "s", math.MaxUint64), "token 18446744073709551615"},
		{"invalid UTF-8", st.Commit(ctx, "s\xff", 1, 1), `shard "s\xff" is not valid UTF-8`},
		{"NUL", st.Fence(ctx, "a\x00b", 1), `shard "a\x00b" contains a NUL byte`},
		{"too long", st.Commit(ctx, long, 1, 1), "1025 bytes, more than 1024"},
		{"load too long", func() error { _, err := st.Load(ctx, long); return err }(), "1025 bytes"},
		{"batch duplicate", st.CommitBatch(ctx, []postgres.Entry{{Shard: "a", Token: 1, Offset: 1}, {Shard: "b", Token: 1, Offset: 1}, {Shard: "a", Token: 2, Offset: 2}}), "entries 0 and 2 are both for shard a"},
		{"batch bad entry", st.CommitBatch(ctx, []postgres.Entry{{Shard: "a", Token: 1, Offset: 1}, {Shard: "b", Token: 1, Offset: -7}}), "batch entry 1"},
		{"fenced tx nil fn", st.FencedTx(ctx, "a", 1, nil), "nil function"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, shard.ErrInvalidArgument) && !errors.Is(tt.err, offsets.ErrInvalidOffset) {
				t.Errorf("error %v wraps neither shard.ErrInvalidArgument nor offsets.ErrInvalidOffset", tt.err)
			}
			if tt.err == nil || !strings.Contains(tt.err.Error(), tt.says) {
				t.Errorf("error %v does not say %q", tt.err, tt.says)
			}
		})
	}
	for _, id := range []shard.ID{"s", "a", "b"} {
		if cp, err := st.Load(ctx, id); err != nil || cp != (offsets.Checkpoint{}) {
			t.Errorf("Load(%s) = %+v, %v after refused calls; want nothing written", id, cp, err)
		}
	}
}

// A table dropped under a running store gives an error naming it.
func TestTableDropped(t *testing.T) {
	srv := pgtest.Shared(t)
	dsn := database(t)
	db := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]
	st := openTable(t, dsn, "dropped")
	if err := st.Commit(t.Context(), "s", 1, 1); err != nil {
		t.Fatal(err)
	}
	srv.Exec(t, db, "DROP TABLE dropped")
	err := st.Commit(t.Context(), "s", 1, 2)
	wantErr(t, err, nil, "", `relation "dropped" does not exist`, "dropped after Open?", "commit shard s")
}

// A pool passed in stays the caller's: Close leaves it open.
func TestCallersPool(t *testing.T) {
	dsn := database(t)
	pool, err := pgxpool.New(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st, err := postgres.Open(t.Context(), postgres.Config{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	if st.Table() != postgres.DefaultTable {
		t.Errorf("Table() = %q, want the default %q", st.Table(), postgres.DefaultTable)
	}
	if err := st.Commit(t.Context(), "s", 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(t.Context()); err != nil {
		t.Fatalf("the caller's pool was closed with the store: %v", err)
	}
	if err := st.Commit(t.Context(), "s", 1, 2); !errors.Is(err, offsets.ErrClosed) {
		t.Fatalf("Commit after Close = %v, want ErrClosed", err)
	}
}

func TestRedactDSN(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db?sslmode=disable":   "postgres://u:xxxxx@h:5432/db?sslmode=disable",
		"postgresql://u@h/db":                         "postgresql://u@h/db",
		"postgres://h/db?password=pw&sslmode=disable": "postgres://h/db?password=xxxxx&sslmode=disable",
		"host=h user=u password=pw dbname=d":          "host=h user=u password=xxxxx dbname=d",
		"host=h password='p w' dbname=d":              "host=h password=xxxxx dbname=d",
		"postgres://u:p@w@h:x/db":                     "postgres://u:xxxxx@h:x/db",
	} {
		if got := postgres.RedactDSN(in); got != want {
			t.Errorf("RedactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}

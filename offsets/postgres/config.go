package postgres

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/shardlease/shardlease/shard"
)

// DefaultTable is the offsets table when Config.Table is empty.
const DefaultTable = "shardlease_offsets"

// versionTable records, per offsets table in its schema, which schema
// version created it.
const versionTable = "shardlease_schema"

// Config says where the offsets live. Open copies it; the caller's struct is
// never modified.
type Config struct {
	// DSN is the connection string, a postgres:// URL or libpq key=value
	// pairs (pgx accepts both, and the PG* environment variables for what
	// it leaves out). Pool parameters such as pool_max_conns may be added.
	// Ignored when Pool is set.
	DSN string
	// Pool, if set, is used instead of opening one from DSN. Close leaves
	// it open: it belongs to the caller, who may share it with the
	// statements of FencedTx.
	Pool *pgxpool.Pool
	// Table is the offsets table, "name" or "schema.name": lowercase
	// letters, digits and underscores, so it needs no quoting when an
	// operator queries it by hand. Default DefaultTable. A missing table
	// is created; the schema must exist.
	Table string
	// MaxHold bounds how long a FencedTx whose client has vanished (powered
	// off, partitioned) keeps the shard's row locked, counted from the last
	// message the server had from it: the server ends the transaction then,
	// and a newer owner's Fence, waiting for the row, gets in. Set it to the
	// workers' lease step-down deadline, shard.LeasePolicy.StepDownAfter:
	// the old owner has stopped by then, and its shards are not handed on
	// before. Default DefaultMaxHold (shard.DefaultPolicy's step-down);
	// between 1 s and 1 h.
	//
	// The price: a live client's FencedTx is ended by the server, and fails,
	// when it stays silent that long inside the transaction (a slow call
	// between two statements) or leaves a result unread that long.
	MaxHold time.Duration
}

var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Validate reports every problem with c at once, wrapping
// shard.ErrInvalidArgument.
func (c Config) Validate() error {
	var problems []string
	if c.Pool == nil && strings.TrimSpace(c.DSN) == "" {
		problems = append(problems, "no DSN and no Pool: give a connection string such as postgres://user:password@host:5432/db")
	}
	if _, err := parseTable(c.Table); err != nil {
		problems = append(problems, err.Error())
	}
	if p := checkMaxHold(c.MaxHold); p != "" {
		problems = append(problems, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: offsets/postgres config: %s", shard.ErrInvalidArgument, strings.Join(problems, "; "))
	}
	return nil
}

// tableName is a validated table name.
type tableName struct {
	schema, name string // schema "" means the search_path's
}

func parseTable(t string) (tableName, error) {
	if t == "" {
		t = DefaultTable
	}
	parts := strings.Split(t, ".")
	bad := len(parts) > 2
	for _, p := range parts {
		bad = bad || !identRE.MatchString(p)
	}
	if bad {
		return tableName{}, fmt.Errorf("table %q: want name or schema.name, each lowercase letters, digits and underscores (at most 63), not starting with a digit", t)
	}
	if len(parts) == 2 {
		return tableName{schema: parts[0], name: parts[1]}, nil
	}
	return tableName{name: parts[0]}, nil
}

// ident returns the quoted identifier of the table (or of another table
// name in the same schema).
func (t tableName) ident(name string) string {
	if t.schema == "" {
		return pgx.Identifier{name}.Sanitize()
	}
	return pgx.Identifier{t.schema, name}.Sanitize()
}

func (t tableName) String() string {
	if t.schema == "" {
		return t.name
	}
	return t.schema + "." + t.name
}

var (
	kvPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)
	urlUser    = regexp.MustCompile(`^([a-z]+://[^:@/?#]*):[^/?#]*@`)
)

// RedactDSN returns dsn with its password replaced by "xxxxx", in URL and in
// key=value form, so that the DSN can be named in errors and logs. A
// string that cannot be parsed is redacted as best it can be.
func RedactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" && u.Host != "" {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	dsn = urlUser.ReplaceAllString(dsn, "$1:xxxxx@")
	return kvPassword.ReplaceAllString(dsn, "${1}xxxxx")
}

package bench

import "strings"

// DSNParam adds a run-time parameter to a PostgreSQL DSN: to the query of
// a URL, or as one more key=value.
func DSNParam(dsn, key, value string) string {
	switch {
	case !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://"):
		return dsn + " " + key + "=" + value
	case strings.Contains(dsn, "?"):
		return dsn + "&" + key + "=" + value
	default:
		return dsn + "?" + key + "=" + value
	}
}

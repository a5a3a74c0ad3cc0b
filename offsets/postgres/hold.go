package postgres

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultMaxHold is Config.MaxHold when it is zero: the step-down deadline
// of shard.DefaultPolicy (TTL 5 s − pause budget 2.5 s), the moment by
// which a worker of that policy has stopped acting for a shard it cannot
// renew.
const DefaultMaxHold = 2500 * time.Millisecond

// MinMaxHold and MaxMaxHold are the range Config.MaxHold must lie in. Below a second a healthy but busy
// connection (a retransmission, a garbage-collection pause of the client)
// would have its transactions cut; above an hour the limit no longer
// protects anyone — a vanished owner keeping a shard for hours is what it
// is there to prevent.
const (
	MinMaxHold = time.Second
	MaxMaxHold = time.Hour
)

// checkMaxHold returns the problem with d as Config.MaxHold, or "".
func checkMaxHold(d time.Duration) string {
	if d == 0 || (d >= MinMaxHold && d <= MaxMaxHold) {
		return ""
	}
	return fmt.Sprintf("max hold %v: must be between %v and %v (zero means the default, %v)", d, MinMaxHold, MaxMaxHold, DefaultMaxHold)
}

// setting is one server parameter a fenced transaction sets for itself
// (SET LOCAL: it ends with the transaction), and the PostgreSQL major
// version that introduced the parameter.
type setting struct {
	name  string
	value int64
	since int
}

// holdSettings are the server-side limits that free a fenced transaction's
// row lock when its client vanishes (powered off, partitioned: nothing is
// closed, nothing more arrives), within about maxHold of the client's last
// message, whatever the backend was doing:
//
//   - waiting for the next statement ("idle in transaction"): the server ends
//     the session after maxHold (idle_in_transaction_session_timeout);
//   - sending a result the client no longer acknowledges, or that fills its
//     window (the backend is blocked in the send, not idle): the kernel
//     aborts the connection once data has stayed unacknowledged for maxHold
//     (tcp_user_timeout; Linux, and Linux 5.11 or later for a zero window);
//   - running a statement: keepalive probes start after a quarter of
//     maxHold of silence (at least 1 s); unanswered, the connection is
//     declared dead — by tcp_user_timeout on Linux, by the probe count
//     elsewhere — and the running statement notices it within one probe
//     interval (client_connection_check_interval) and is aborted.
//
// In every case the transaction is rolled back and its locks released.
func holdSettings(maxHold time.Duration) []setting {
	ms := maxHold.Milliseconds()
	probe := max(int64(maxHold/4/time.Second), 1) // keepalive idle and interval, whole seconds
	count := max((int64(maxHold/time.Second)-probe)/probe, 1)
	return []setting{
		{"idle_in_transaction_session_timeout", ms, 0}, // 9.6
		{"tcp_user_timeout", ms, 12},
		{"tcp_keepalives_idle", probe, 0},
		{"tcp_keepalives_interval", probe, 0},
		{"tcp_keepalives_count", count, 0},
		{"client_connection_check_interval", probe * 1000, 14},
	}
}

// holdSQL is the one statement that applies settings for the current
// transaction on a server of the given major version; parameters the server
// does not know are left out (0: unknown version, all of them are sent).
func holdSQL(settings []setting, major int) string {
	var b strings.Builder
	for _, s := range settings {
		if major != 0 && major < s.since {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("SELECT ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "set_config('%s', '%d', true)", s.name, s.value)
	}
	return b.String()
}

// serverMajor reads the major version from the server_version the server
// reports at connection ("15.18 (Debian 15.18-1.pgdg120+1)", "9.6.24"); 0
// when it cannot.
func serverMajor(version string) int {
	end := strings.IndexFunc(version, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(version)
	}
	n, err := strconv.Atoi(version[:end])
	if err != nil {
		return 0
	}
	return n
}

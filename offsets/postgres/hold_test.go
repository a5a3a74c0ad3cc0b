package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// The default hold is the default lease policy's step-down deadline, as
// its doc says.
func TestDefaultMaxHoldIsTheStepDown(t *testing.T) {
	if sd := shard.DefaultPolicy.StepDownAfter(); DefaultMaxHold != sd {
		t.Fatalf("DefaultMaxHold = %v, shard.DefaultPolicy steps down after %v", DefaultMaxHold, sd)
	}
}

// Every limit is derived from the hold, and the keepalive probes declare a
// silent peer dead within the hold where the probe count decides (not
// tcp_user_timeout: outside Linux) — within 2 s for a hold under 2 s, as
// probes go by whole seconds.
func TestHoldSettings(t *testing.T) {
	tests := []struct {
		hold                            time.Duration
		idleTxMs, probe, count, checkMs int64
		deadAfterS                      int64 // idle + count × interval
	}{
		{time.Second, 1000, 1, 1, 1000, 2},
		{2 * time.Second, 2000, 1, 1, 1000, 2},
		{1500 * time.Millisecond, 1500, 1, 1, 1000, 2},
		{DefaultMaxHold, 2500, 1, 1, 1000, 2},
		{5 * time.Second, 5000, 1, 4, 1000, 5},
		{10 * time.Second, 10000, 2, 4, 2000, 10},
		{time.Hour, 3600000, 900, 3, 900000, 3600},
	}
	for _, tt := range tests {
		got := map[string]int64{}
		for _, s := range holdSettings(tt.hold) {
			got[s.name] = s.value
		}
		want := map[string]int64{
			"idle_in_transaction_session_timeout": tt.idleTxMs,
			"tcp_user_timeout":                    tt.idleTxMs,
			"tcp_keepalives_idle":                 tt.probe,
			"tcp_keepalives_interval":             tt.probe,
			"tcp_keepalives_count":                tt.count,
			"client_connection_check_interval":    tt.checkMs,
		}
		if len(got) != len(want) {
			t.Errorf("hold %v: settings %v, want %v", tt.hold, got, want)
		}
		for name, v := range want {
			if got[name] != v {
				t.Errorf("hold %v: %s = %d, want %d", tt.hold, name, got[name], v)
			}
		}
		if dead := got["tcp_keepalives_idle"] + got["tcp_keepalives_count"]*got["tcp_keepalives_interval"]; dead != tt.deadAfterS {
			t.Errorf("hold %v: keepalive declares a silent peer dead after %d s, want %d", tt.hold, dead, tt.deadAfterS)
		}
	}
}

// Parameters a server does not know are not sent to it.
func TestHoldSQL(t *testing.T) {
	settings := holdSettings(2 * time.Second)
	for _, tt := range []struct {
		major     int
		has, hasn []string
	}{
		{0, []string{"client_connection_check_interval", "tcp_user_timeout", "idle_in_transaction"}, nil},
		{15, []string{"set_config('client_connection_check_interval', '1000', true)", "set_config('tcp_user_timeout', '2000', true)"}, nil},
		{13, []string{"tcp_user_timeout", "tcp_keepalives_count"}, []string{"client_connection_check_interval"}},
		{11, []string{"idle_in_transaction_session_timeout', '2000'", "tcp_keepalives_idle"}, []string{"tcp_user_timeout", "client_connection"}},
	} {
		sql := holdSQL(settings, tt.major)
		if !strings.HasPrefix(sql, "SELECT set_config(") {
			t.Errorf("major %d: %q is not one SELECT of set_config calls", tt.major, sql)
		}
		for _, s := range tt.has {
			if !strings.Contains(sql, s) {
				t.Errorf("major %d: %q lacks %q", tt.major, sql, s)
			}
		}
		for _, s := range tt.hasn {
			if strings.Contains(sql, s) {
				t.Errorf("major %d: %q sets %q, which that server does not know", tt.major, sql, s)
			}
		}
	}
}

func TestServerMajor(t *testing.T) {
	for in, want := range map[string]int{
		"15.18 (Debian 15.18-1.pgdg120+1)": 15,
		"9.6.24":                           9,
		"17beta1":                          17,
		"14":                               14,
		"":                                 0,
		"PostgreSQL 15":                    0,
	} {
		if got := serverMajor(in); got != want {
			t.Errorf("serverMajor(%q) = %d, want %d", in, got, want)
		}
	}
}

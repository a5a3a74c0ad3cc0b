package consul

import (
	"testing"
	"time"
)

func TestEndpoint(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/kv/shardlease/orders/shards/stream/shard-001": "/v1/kv",
		"/v1/txn":                             "/v1/txn",
		"/v1/session/renew/5f4e-...":          "/v1/session/renew",
		"/v1/session/info/5f4e":               "/v1/session/info",
		"/v1/agent/check/update/shardlease-x": "/v1/agent/check/update",
		"/v1/agent/checks":                    "/v1/agent/checks",
		"/v1/status/leader":                   "/v1/status/leader",
	} {
		if got := endpoint(path); got != want {
			t.Errorf("endpoint(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestClassifyTxnError pins the Consul 1.14 texts the coordinator reads.
func TestClassifyTxnError(t *testing.T) {
	for what, want := range map[string]txnRefusal{
		`failed to lock key "p/shards/a", lock is already held`:                                 refusedHeld,
		`failed to lock key "p/shards/b" due to lock delay`:                                     refusedLockDelay,
		`failed to unlock key "p/shards/a", lock isn't held, or is held by another session`:     refusedNotHeld,
		`invalid session "bogus"`:                                                               refusedBadSession,
		`Permission denied: token with AccessorID '0002' lacks permission 'key:write' on "p/x"`: refusedPermission,
		`failed to delete key "p/members/w", index is stale`:                                    refusedStaleIndex,
		`key "p/shards/a" doesn't exist`:                                                        refusedKeyMissing,
		`something new`:                                                                         refusedOther,
	} {
		if got := classifyTxnError(what); got != want {
			t.Errorf("classifyTxnError(%q) = %d, want %d", what, got, want)
		}
	}
}

func TestLockDelayString(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                       "0s",
		time.Nanosecond:         "1ms", // Consul would read "1ns" (< 1000) as one second
		999 * time.Microsecond:  "1ms",
		1500 * time.Millisecond: "1.5s",
		15 * time.Second:        "15s",
	} {
		if got := lockDelayString(d); got != want {
			t.Errorf("lockDelayString(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestSanitize(t *testing.T) {
	if got := sanitize("team/w 1:é"); got != "team_w_1__" {
		t.Errorf("sanitize = %q", got)
	}
}

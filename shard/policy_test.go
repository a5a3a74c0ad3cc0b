package shard

import (
	"strings"
	"testing"
	"time"
)

// TestLeasePolicyNeverAllowsNoLockDelay: whatever the durations, a policy
// that keeps the first rule needs a lock-delay above zero, so "none" can
// never be valid; a negative one is refused saying so.
func TestLeasePolicyNeverAllowsNoLockDelay(t *testing.T) {
	steps := []time.Duration{time.Nanosecond, time.Millisecond, 300 * time.Millisecond, time.Second, 7 * time.Second, time.Minute}
	for _, ttl := range steps {
		for _, renew := range steps {
			for _, pause := range append([]time.Duration{0}, steps...) {
				p := LeasePolicy{TTL: ttl, RenewEvery: renew, PauseBudget: pause}
				if p.Validate() != nil {
					continue // breaks the first rule
				}
				if p.MinLockDelay() <= 0 {
					t.Errorf("%+v keeps the first rule with a minimum lock-delay of %v", p, p.MinLockDelay())
				}
				p.LockDelay = p.MinLockDelay() - time.Nanosecond
				if p.LockDelay > 0 && p.Validate() == nil {
					t.Errorf("%+v: a lock-delay below the step-down deadline passes", p)
				}
			}
		}
	}
	err := LeasePolicy{TTL: 10 * time.Second, RenewEvery: 2 * time.Second, PauseBudget: 5 * time.Second, LockDelay: -1}.Validate()
	if err == nil || !strings.Contains(err.Error(), "lock-delay -1ns must not be negative: zero means the default, the ttl, and there is no policy without one") {
		t.Errorf("a negative lock-delay: %v; want it refused, saying zero is the ttl and none is never allowed", err)
	}
}

// TestLeasePolicySessionSpec: the session asks for the effective lock-delay,
// explicitly: a policy's zero is the TTL, never the coordinator's zero.
func TestLeasePolicySessionSpec(t *testing.T) {
	for _, tc := range []struct {
		p    LeasePolicy
		want SessionSpec
	}{
		{DefaultPolicy, SessionSpec{Worker: "w", TTL: 5 * time.Second, LockDelay: 3 * time.Second}},
		{SessionTTLPolicy, SessionSpec{Worker: "w", TTL: 10 * time.Second, LockDelay: 10 * time.Second}},
		{FastPolicy, SessionSpec{Worker: "w", TTL: 1500 * time.Millisecond, LockDelay: 800 * time.Millisecond}},
	} {
		if got := tc.p.SessionSpec("w"); got != tc.want {
			t.Errorf("%+v.SessionSpec = %+v, want %+v", tc.p, got, tc.want)
		}
	}
}

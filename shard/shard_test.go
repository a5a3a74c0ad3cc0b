package shard

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestLeasePolicyRule(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     LeasePolicy
		ok    bool
		wants []string
	}{
		{"the source material's 30s/10s/12s example breaks the rule", LeasePolicy{TTL: 30 * time.Second, RenewEvery: 10 * time.Second, PauseBudget: 12 * time.Second}, false,
			[]string{"2 × renew 10s + pause 12s = 32s exceeds ttl 30s by 2s"}},
		{"exactly at the limit", LeasePolicy{TTL: 10 * time.Second, RenewEvery: 2 * time.Second, PauseBudget: 6 * time.Second}, true, nil},
		{"default", DefaultPolicy, true, nil},
		{"fast", FastPolicy, true, nil},
		{"lock-delay exactly the step-down deadline", LeasePolicy{TTL: 10 * time.Second, RenewEvery: 2 * time.Second, PauseBudget: 5 * time.Second, LockDelay: 5 * time.Second}, true, nil},
		{"lock-delay shorter than the step-down deadline", LeasePolicy{TTL: 10 * time.Second, RenewEvery: 2 * time.Second, PauseBudget: 5 * time.Second, LockDelay: time.Second}, false,
			[]string{"lock-delay 1s is shorter than the step-down deadline ttl 10s − pause 5s = 5s by 4s"}},
		{"the fast policy as benchmarked before the lock-delay rule", LeasePolicy{TTL: 2 * time.Second, RenewEvery: 500 * time.Millisecond, PauseBudget: time.Second, LockDelay: 500 * time.Millisecond}, false,
			[]string{"lock-delay 500ms is shorter than the step-down deadline ttl 2s − pause 1s = 1s by 500ms"}},
		{"zero pause budget", LeasePolicy{TTL: time.Second, RenewEvery: 500 * time.Millisecond}, true, nil},
		{"every problem at once", LeasePolicy{RenewEvery: -time.Second, PauseBudget: -time.Second, LockDelay: -time.Second}, false,
			[]string{"ttl 0s must be positive", "renew interval -1s must be positive", "pause budget -1s must not be negative", "lock-delay -1s must not be negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.ok {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want ok", tc.p, err)
				}
				if tc.p.StepDownAfter() < 2*tc.p.RenewEvery {
					t.Errorf("step-down after %v leaves no room for two renewals of %v", tc.p.StepDownAfter(), tc.p.RenewEvery)
				}
				if tc.p.EffectiveLockDelay() < tc.p.StepDownAfter() {
					t.Errorf("lock-delay %v frees the locks before the step-down deadline %v", tc.p.EffectiveLockDelay(), tc.p.StepDownAfter())
				}
				return
			}
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("Validate(%+v) = %v, want ErrInvalidPolicy", tc.p, err)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestConfigIDs(t *testing.T) {
	ids := Config{Shards: 128}.IDs()
	if len(ids) != 128 || ids[0] != "stream/shard-000" || ids[127] != "stream/shard-127" {
		t.Fatalf("IDs() = %v … %v (%d)", ids[0], ids[len(ids)-1], len(ids))
	}
	for i := 1; i < len(ids); i++ {
		if ids[i-1] >= ids[i] {
			t.Fatalf("IDs not in order: %s before %s", ids[i-1], ids[i])
		}
	}
	if got := (Config{Shards: 4096, Name: "orders/p"}).IDs(); got[4095] != "orders/p-4095" || got[7] != "orders/p-0007" {
		t.Errorf("4096 shards: %s, %s", got[7], got[4095])
	}
	if !(Config{Shards: 8}).Equal(Config{Shards: 8, Name: DefaultName}) || (Config{Shards: 8}).Equal(Config{Shards: 9}) {
		t.Error("Equal ignores the default name or the count")
	}
}

func TestConfigValidateNamesTheValue(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Shards: 0}, "shard count 0"},
		{Config{Shards: MaxShards + 1}, "shard count 131073"},
		{Config{Shards: 4, Name: "/abs"}, `"/abs"`},
		{Config{Shards: 4, Name: "has space"}, `"has space"`},
		{Config{Shards: 4, Protocol: -2}, "protocol -2"},
	} {
		err := tc.c.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidConfig naming %s", tc.c, err, tc.want)
		}
	}
}

func TestNextIndexFollowsBlockingQueryRules(t *testing.T) {
	for _, tc := range []struct{ prev, got, want uint64 }{
		{0, 5, 5}, // first query
		{5, 9, 9}, // moved on
		{9, 9, 9}, // unchanged: wait again on the same index
		{9, 3, 0}, // went backwards: the state was reset, start over
		{0, 0, 1}, // 0 is never waited on
		{7, 0, 0}, // a reset to 0 is a reset
	} {
		if got := NextIndex(tc.prev, tc.got); got != tc.want {
			t.Errorf("NextIndex(%d, %d) = %d, want %d", tc.prev, tc.got, got, tc.want)
		}
	}
}

func TestSnapshotLookups(t *testing.T) {
	s := Snapshot{
		Members: []MemberState{{Member: Member{ID: "a"}, Session: "s1"}, {Member: Member{ID: "b"}}, {Member: Member{ID: "c"}, Session: "s3"}},
		Shards: []ShardState{
			{Shard: "x-000", Session: "s1", Token: 5},
			{Shard: "x-001", Session: "s9", Token: 6}, // a session with no live member
			{Shard: "x-002", Token: 7},                // free
			{Shard: "x-003", Session: "s3", Token: 8},
		},
	}
	if st, ok := s.Shard("x-003"); !ok || st.Token != 8 {
		t.Errorf("Shard(x-003) = %+v, %v", st, ok)
	}
	if _, ok := s.Shard("x-004"); ok {
		t.Error("Shard found a missing key")
	}
	if m, ok := s.Member("b"); !ok || m.Live() {
		t.Errorf("Member(b) = %+v, %v: want the dead member", m, ok)
	}
	owners := s.Owners()
	if len(owners) != 2 || owners["x-000"] != "a" || owners["x-003"] != "c" {
		t.Errorf("Owners() = %v", owners)
	}
	if c := s.Counts(); len(c) != 2 || c["a"] != 1 || c["c"] != 1 {
		t.Errorf("Counts() = %v: want live members a and c with one shard each", c)
	}
}

// TestRoleLockRefusesTheFleetsOwnNames checks that no role's lock can be
// one of the fleet's own keys or directories, on any engine's layout.
func TestRoleLockRefusesTheFleetsOwnNames(t *testing.T) {
	for _, name := range []string{"config", "freeze", "policy", "members", "shards", "assign", "loads", "offsets", "history", "standby", "sessions"} {
		if err := RoleLock(name).Validate(); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("RoleLock(%q).Validate() = %v, want ErrInvalidArgument", name, err)
		}
	}
	for _, name := range []string{"assignor", "leader", "scheduler-2"} {
		if err := RoleLock(name).Validate(); err != nil {
			t.Errorf("RoleLock(%q).Validate() = %v, want nil", name, err)
		}
	}
}

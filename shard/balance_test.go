package shard_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestBalancePolicyJSON: P/policy's value keeps durations readable and
// round-trips every field; a value naming a bad duration or an invalid
// figure is refused, naming it.
func TestBalancePolicyJSON(t *testing.T) {
	p := shard.BalancePolicy{MaxMovesInFlight: 12, StuckAfter: 45 * time.Second, ColdStartGather: -1, PrepareTimeout: 20 * time.Second, Standbys: 1,
		Load: &shard.LoadBalance{Tolerance: 0.08, MinResidence: 2 * time.Minute, MinGain: 0.03, Patience: 15 * time.Second}}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"stuck_after":"45s"`, `"min_residence":"2m0s"`, `"max_moves_in_flight":12`, `"prepare_timeout":"20s"`, `"standbys":1`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	var back shard.BalancePolicy
	if err := json.Unmarshal(b, &back); err != nil || !back.Equal(p) {
		t.Fatalf("round trip of %s = %v, %v; want %v", b, back, err, p)
	}
	if err := json.Unmarshal([]byte(`{}`), &back); err != nil || !back.Equal(shard.BalancePolicy{}) {
		t.Fatalf("{} = %v, %v; want the zero policy", back, err)
	}
	for value, names := range map[string]string{
		`{"stuck_after":"soon"}`:           `"soon"`,
		`{"load":{"patience":"1 minute"}}`: `"1 minute"`,
		`{"max_moves_in_flight":-2}`:       "-2",
		`{"load":{"tolerance":2}}`:         "tolerance 2",
		`{"load":{"min_residence":"-1s"}}`: "-1s",
		`{"prepare_timeout":"2h"}`:         "prepare timeout 2h0m0s",
		`{"standbys":4}`:                   "standbys 4",
		`{"max_moves_in_flight":"twelve"}`: "max_moves_in_flight",
		`{"max_moves":4}`:                  `"max_moves"`,
		`{"load":{"tolerence":0.5}}`:       `"tolerence"`,
		`null`:                             "null",
	} {
		if err := json.Unmarshal([]byte(value), &back); err == nil || !strings.Contains(err.Error(), names) {
			t.Errorf("%s: error %v, want one naming %s", value, err, names)
		}
	}
}

// TestBalancePolicyValidate: every wrong value is named at once, under
// ErrInvalidArgument; the zero policy and load balancing's zero tunables
// are valid (they mean the defaults).
func TestBalancePolicyValidate(t *testing.T) {
	if err := (shard.BalancePolicy{Load: &shard.LoadBalance{}}).Validate(); err != nil {
		t.Fatalf("zero policy with load: %v", err)
	}
	bad := shard.BalancePolicy{MaxMovesInFlight: -1, StuckAfter: -time.Second,
		Load: &shard.LoadBalance{Tolerance: 1, MinGain: -0.5, MinResidence: -time.Minute, Patience: -time.Second}}
	err := bad.Validate()
	if !errors.Is(err, shard.ErrInvalidArgument) {
		t.Fatalf("Validate(%v) = %v, want ErrInvalidArgument", bad, err)
	}
	for _, want := range []string{"-1 must", "-1s must", "tolerance 1 ", "gain -0.5", "residence -1m0s", "patience -1s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// TestBalancePolicyString: the one-line form names every setting,
// defaults as such.
func TestBalancePolicyString(t *testing.T) {
	for p, want := range map[*shard.BalancePolicy]string{
		{}: "moves in flight default, stuck after default, cold-start gather default, balancing shard counts",
		{MaxMovesInFlight: 4, ColdStartGather: -1, Load: &shard.LoadBalance{Tolerance: 0.1, Patience: time.Second}}: "moves in flight 4, stuck after default, cold-start gather none, balancing load (tolerance ±10 %, residence default, gain default, patience 1s)",
	} {
		if got := p.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

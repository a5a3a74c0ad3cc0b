package shard

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	r, err := ParseRule("pin orders-01* zone=eu-west-1a,disk=ssd")
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != RulePin || r.Shards != "orders-01*" || r.Labels["zone"] != "eu-west-1a" || r.Labels["disk"] != "ssd" {
		t.Fatalf("parsed %+v", r)
	}
	if got := r.String(); got != "pin orders-01* disk=ssd,zone=eu-west-1a" {
		t.Errorf("String() = %q", got)
	}
	for _, bad := range []struct{ in, says string }{
		{"pin orders-01*", "KIND SHARDS LABELS"},
		{"keep orders-01* zone=a", `kind "keep"`},
		{"pin ord*ers zone=a", "before its end"},
		{"avoid * zone", "no '='"},
		{"prefer * zone=a b", "KIND SHARDS LABELS"},
	} {
		_, err := ParseRule(bad.in)
		if err == nil || !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("ParseRule(%q) = %v, want an invalid argument saying %q", bad.in, err, bad.says)
		}
	}
}

func TestAllows(t *testing.T) {
	rules := []PlacementRule{
		{Shards: "a-0*", Kind: RulePin, Labels: map[string]string{"zone": "z1"}},
		{Shards: "a-00", Kind: RuleAvoid, Labels: map[string]string{"disk": "hdd"}},
		{Shards: "*", Kind: RulePrefer, Labels: map[string]string{"disk": "ssd"}},
	}
	for _, c := range []struct {
		id     ID
		zone   string
		labels map[string]string
		want   bool
	}{
		{"a-00", "z1", map[string]string{"disk": "ssd"}, true},
		{"a-00", "z1", map[string]string{"disk": "hdd"}, false}, // avoided
		{"a-01", "z2", nil, false},                              // not pinned zone
		{"a-01", "", map[string]string{"zone": "z1"}, false},    // a label named zone is not the zone
		{"b-01", "z2", nil, true},                               // only prefer applies
	} {
		if got := Allows(rules, c.id, c.zone, c.labels); got != c.want {
			t.Errorf("Allows(%s, zone %q, %v) = %v, want %v", c.id, c.zone, c.labels, got, c.want)
		}
	}
}

func TestPolicyRulesRoundTrip(t *testing.T) {
	p := BalancePolicy{MaxMovesInFlight: 4, Rules: []PlacementRule{{Shards: "x*", Kind: RuleAvoid, Labels: map[string]string{"disk": "hdd"}}}}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"rules":[{"shards":"x*","kind":"avoid","labels":{"disk":"hdd"}}]`) {
		t.Errorf("stored as %s", b)
	}
	var q BalancePolicy
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	if !q.Equal(p) {
		t.Errorf("read back %+v, want %+v", q, p)
	}
	bad := `{"rules":[{"shards":"x*","kind":"pin","labels":{}}]}`
	if err := json.Unmarshal([]byte(bad), &q); err == nil || !strings.Contains(err.Error(), "selects no members") {
		t.Errorf("a rule without labels read as %v", err)
	}
	if q2 := p.Clone(); !q2.Equal(p) {
		t.Error("a clone differs")
	} else if q2.Rules[0].Labels["disk"] = "ssd"; p.Rules[0].Labels["disk"] != "hdd" {
		t.Error("a clone shares its labels")
	}
}

package shard

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// RuleKind is what a placement rule does with the members its labels
// select.
type RuleKind string

// The kinds of placement rule. Pin and Avoid are hard: while the rules are
// in effect (every live member speaks StepRules) the assignor never gives
// a shard to a member they exclude, and a shard that no live member may
// take stays unowned (and is reported) rather than go elsewhere. Prefer is
// soft: it decides among the members balance lets take a shard.
const (
	// RulePin: only members whose labels match may own the shard.
	RulePin RuleKind = "pin"
	// RuleAvoid: members whose labels match may not own the shard.
	RuleAvoid RuleKind = "avoid"
	// RulePrefer: members whose labels match are chosen first when the
	// shard is placed, and keep it first when they must shed shards.
	RulePrefer RuleKind = "prefer"
)

// Hard reports whether rules of kind k are never broken.
func (k RuleKind) Hard() bool { return k == RulePin || k == RuleAvoid }

// ZoneLabel is the label key a rule uses to select members by zone
// (Member.Zone): "zone=eu-west-1a". A member label of that name is not
// consulted.
const ZoneLabel = "zone"

// MaxRules bounds how many placement rules a fleet stores, so that its
// policy stays one small key.
const MaxRules = 2000

// PlacementRule pins shards to, prefers for them, or keeps them from the
// members whose labels match. Rules are part of the fleet's balance policy
// (BalancePolicy.Rules) and take effect once every live member speaks
// StepRules.
type PlacementRule struct {
	// Shards is the shards the rule is about: one shard's ID, or a prefix
	// followed by '*' ("orders-01*"); "*" alone is every shard. A prefix
	// selects the shards whose IDs begin with it, so a rule costs the
	// assignor a binary search, not a pass over the shards.
	Shards string
	Kind   RuleKind
	// Labels selects members: each key must be among the member's labels
	// with the value given (ZoneLabel compares the member's zone). At
	// least one.
	Labels map[string]string
}

// Validate says what is wrong with r, naming the value.
func (r PlacementRule) Validate() error {
	if r.Shards == "" {
		return fmt.Errorf("%w: placement rule with no shards: give a shard ID or a prefix followed by '*'", ErrInvalidArgument)
	}
	if i := strings.IndexByte(r.Shards, '*'); i >= 0 && i != len(r.Shards)-1 {
		return fmt.Errorf("%w: placement rule's shards %q has a '*' before its end: only a trailing '*' (a prefix) is understood", ErrInvalidArgument, r.Shards)
	}
	switch r.Kind {
	case RulePin, RuleAvoid, RulePrefer:
	default:
		return fmt.Errorf("%w: placement rule kind %q is not one of pin, avoid, prefer", ErrInvalidArgument, r.Kind)
	}
	if len(r.Labels) == 0 {
		return fmt.Errorf("%w: placement rule %q for %q selects no members: give labels as key=value", ErrInvalidArgument, r.Kind, r.Shards)
	}
	if err := ValidateLabels(r.Labels); err != nil {
		return fmt.Errorf("placement rule %q for %q: %w", r.Kind, r.Shards, err)
	}
	return nil
}

// Prefix returns the prefix the rule selects shards by and whether it is a
// prefix (false: Shards is one shard's ID).
func (r PlacementRule) Prefix() (string, bool) {
	p, ok := strings.CutSuffix(r.Shards, "*")
	return p, ok
}

// Matches reports whether the rule is about shard id.
func (r PlacementRule) Matches(id ID) bool {
	if p, ok := r.Prefix(); ok {
		return strings.HasPrefix(string(id), p)
	}
	return string(id) == r.Shards
}

// Selects reports whether a member in zone with labels matches the rule's
// labels.
func (r PlacementRule) Selects(zone string, labels map[string]string) bool {
	for k, v := range r.Labels {
		got, ok := labels[k]
		if k == ZoneLabel {
			got, ok = zone, zone != ""
		}
		if !ok || got != v {
			return false
		}
	}
	return true
}

// Allows reports whether rules let a member in zone with labels own shard
// id: no pin of the shard excludes it and no avoid selects it.
func Allows(rules []PlacementRule, id ID, zone string, labels map[string]string) bool {
	for _, r := range rules {
		if !r.Kind.Hard() || !r.Matches(id) {
			continue
		}
		if r.Selects(zone, labels) != (r.Kind == RulePin) {
			return false
		}
	}
	return true
}

// String is the rule as shardctl takes it: "pin orders-01* zone=a,disk=ssd".
func (r PlacementRule) String() string {
	parts := make([]string, 0, len(r.Labels))
	for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
		parts = append(parts, k+"="+r.Labels[k])
	}
	return fmt.Sprintf("%s %s %s", r.Kind, r.Shards, strings.Join(parts, ","))
}

// ParseRule reads a rule written as String writes it: a kind, the shards
// and the labels, separated by spaces.
func ParseRule(s string) (PlacementRule, error) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return PlacementRule{}, fmt.Errorf("%w: placement rule %q: write KIND SHARDS LABELS, e.g. \"pin orders-01* zone=eu-west-1a\"", ErrInvalidArgument, s)
	}
	labels, err := ParseLabels(f[2])
	if err != nil {
		return PlacementRule{}, fmt.Errorf("placement rule %q: %w", s, err)
	}
	r := PlacementRule{Kind: RuleKind(f[0]), Shards: f[1], Labels: labels}
	if err := r.Validate(); err != nil {
		return PlacementRule{}, err
	}
	return r, nil
}

// Equal reports whether r and q are the same rule.
func (r PlacementRule) Equal(q PlacementRule) bool {
	return r.Shards == q.Shards && r.Kind == q.Kind && maps.Equal(r.Labels, q.Labels)
}

// ruleValue is a rule as P/policy holds it.
type ruleValue struct {
	Shards string            `json:"shards"`
	Kind   RuleKind          `json:"kind"`
	Labels map[string]string `json:"labels"`
}

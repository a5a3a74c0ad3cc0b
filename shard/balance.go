package shard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// BalancePolicy is the fleet's balancing policy, stored beside its config
// (P/policy) and followed live by whichever worker is the assignor: how
// many hand-offs run at once, when a worker that takes nothing is judged
// stuck, how long a cold fleet gathers its members before the first
// placement, and whether (and how) load rather than shard counts is
// balanced. Zero fields take the assignor's defaults. It is written with
// Fleet.SetPolicy, which refuses a policy Validate refuses, and changed
// with shardctl balance.
type BalancePolicy struct {
	// MaxMovesInFlight caps the hand-offs in flight across the fleet; 0:
	// one member's share, at least 16.
	MaxMovesInFlight int
	// StuckAfter is how long a worker given free shards may take none
	// before it is judged stuck; 0: the default. The assignor never judges
	// sooner than its worker's lease allows (assignor.StuckAfter).
	StuckAfter time.Duration
	// ColdStartGather bounds how long a cold fleet waits for its members
	// to stop joining before the first placement; 0: 10 s; negative: at
	// once.
	ColdStartGather time.Duration
	// Load, when not nil, balances the load the workers report instead of
	// shard counts, within these tunables (zero fields: their defaults).
	// Nil: count balance.
	Load *LoadBalance
	// Rules place shards by the members' labels and zones (PlacementRule),
	// at most MaxRules, applied in order of no importance: a shard may be
	// owned only by a member every hard rule about it allows. They take
	// effect only while every live member speaks StepRules, and are
	// written only then (release 0.1.0 reads P/policy strictly and finds
	// a policy with rules unreadable).
	Rules []PlacementRule
	// PrepareTimeout is the longest a warm move waits for its target's
	// standby to be ready before it moves the shard cold; 0: the default
	// (a minute), at most MaxPrepareTimeout. Written only while every
	// live member speaks StepStandbys, for the reason Rules are.
	PrepareTimeout time.Duration
	// Standbys is how many standbys for failover each owned shard has,
	// on other workers whose handler has a standby side (other zones
	// first): a lost owner's shard goes to the most advanced of them,
	// whose state is warm. 0: none (standbys only prepare warm moves); at
	// most MaxStandbys. Written only while every live member speaks
	// StepStandbys.
	Standbys int
}

// MaxStandbys bounds BalancePolicy.Standbys: each standby costs its
// worker a tail of the shard's stream.
const MaxStandbys = 3

// MaxPrepareTimeout bounds BalancePolicy.PrepareTimeout: a standby that
// never gets ready delays a drain or a join by at most this long.
const MaxPrepareTimeout = time.Hour

// LoadBalance tunes load balancing (rebalance.LoadPolicy's fields, as
// stored, and as a worker proposes them: worker.Config.LoadBalance): the band's tolerance around the mean load per capacity, how
// long a moved shard stays put, how much a move must narrow a gap, how
// long a member must stay outside the band before it is corrected.
type LoadBalance struct {
	Tolerance    float64
	MinResidence time.Duration
	MinGain      float64
	Patience     time.Duration
}

// Clone returns a copy of p that shares nothing with it.
func (p BalancePolicy) Clone() BalancePolicy {
	if p.Load != nil {
		l := *p.Load
		p.Load = &l
	}
	if p.Rules != nil {
		rules := make([]PlacementRule, len(p.Rules))
		for i, r := range p.Rules {
			r.Labels = maps.Clone(r.Labels)
			rules[i] = r
		}
		p.Rules = rules
	}
	return p
}

// Equal reports whether p and q are the same policy.
func (p BalancePolicy) Equal(q BalancePolicy) bool {
	if (p.Load == nil) != (q.Load == nil) || (p.Load != nil && *p.Load != *q.Load) {
		return false
	}
	if !slices.EqualFunc(p.Rules, q.Rules, PlacementRule.Equal) {
		return false
	}
	p.Load, q.Load, p.Rules, q.Rules = nil, nil, nil, nil
	return p.MaxMovesInFlight == q.MaxMovesInFlight && p.StuckAfter == q.StuckAfter && p.ColdStartGather == q.ColdStartGather &&
		p.PrepareTimeout == q.PrepareTimeout && p.Standbys == q.Standbys
}

// Validate reports every problem with p at once, naming each wrong value.
func (p BalancePolicy) Validate() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if p.MaxMovesInFlight < 0 {
		add("max moves in flight %d must not be negative (zero means one member's share, at least 16)", p.MaxMovesInFlight)
	}
	if p.StuckAfter < 0 {
		add("stuck after %v must not be negative (zero means the default)", p.StuckAfter)
	}
	if l := p.Load; l != nil {
		if !(l.Tolerance >= 0 && l.Tolerance < 1) {
			add("load tolerance %v must be a fraction in [0, 1) (0.10: ±10 %%; zero means the default)", l.Tolerance)
		}
		if !(l.MinGain >= 0 && l.MinGain < 1) {
			add("load minimum gain %v must be a fraction in [0, 1) (zero means the default)", l.MinGain)
		}
		if l.MinResidence < 0 {
			add("load minimum residence %v must not be negative (zero means the default)", l.MinResidence)
		}
		if l.Patience < 0 {
			add("load patience %v must not be negative (zero means the default)", l.Patience)
		}
	}
	if p.PrepareTimeout < 0 || p.PrepareTimeout > MaxPrepareTimeout {
		add("prepare timeout %v must be between 0 (the default, a minute) and %v", p.PrepareTimeout, MaxPrepareTimeout)
	}
	if p.Standbys < 0 || p.Standbys > MaxStandbys {
		add("standbys %d must be between 0 (none) and %d", p.Standbys, MaxStandbys)
	}
	if len(p.Rules) > MaxRules {
		add("%d placement rules; at most %d (write prefixes: one rule covers every shard whose ID begins with it)", len(p.Rules), MaxRules)
	}
	for i, r := range p.Rules {
		if err := r.Validate(); err != nil {
			add("rule %d: %v", i+1, strings.TrimPrefix(err.Error(), ErrInvalidArgument.Error()+": "))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: balance policy: %s", ErrInvalidArgument, strings.Join(problems, "; "))
	}
	return nil
}

// String is the policy in one line, for logs and shardctl.
func (p BalancePolicy) String() string {
	moves := "default"
	if p.MaxMovesInFlight > 0 {
		moves = fmt.Sprint(p.MaxMovesInFlight)
	}
	s := fmt.Sprintf("moves in flight %s, stuck after %s, cold-start gather %s", moves, orDefault(p.StuckAfter), orDefault(p.ColdStartGather))
	if p.PrepareTimeout != 0 {
		s += fmt.Sprintf(", prepare timeout %v", p.PrepareTimeout)
	}
	switch {
	case p.Standbys == 1:
		s += ", 1 standby per shard"
	case p.Standbys > 1:
		s += fmt.Sprintf(", %d standbys per shard", p.Standbys)
	}
	if l := p.Load; l != nil {
		s += fmt.Sprintf(", balancing load (tolerance %s, residence %s, gain %s, patience %s)",
			fractionOrDefault(l.Tolerance), orDefault(l.MinResidence), fractionOrDefault(l.MinGain), orDefault(l.Patience))
		if len(p.Rules) > 0 {
			s += fmt.Sprintf(", %d placement rules", len(p.Rules))
		}
		return s
	}
	s += ", balancing shard counts"
	if len(p.Rules) > 0 {
		s += fmt.Sprintf(", %d placement rules", len(p.Rules))
	}
	return s
}

func orDefault(d time.Duration) string {
	switch {
	case d == 0:
		return "default"
	case d < 0:
		return "none"
	}
	return d.String()
}

func fractionOrDefault(f float64) string {
	if f == 0 {
		return "default"
	}
	return fmt.Sprintf("±%g %%", math.Round(f*1000)/10)
}

// balanceValue is P/policy's value: durations as Go duration strings, so
// an operator reading the key sees "10s", not nanoseconds.
type balanceValue struct {
	MaxMovesInFlight int         `json:"max_moves_in_flight,omitempty"`
	StuckAfter       string      `json:"stuck_after,omitempty"`
	ColdStartGather  string      `json:"cold_start_gather,omitempty"`
	Load             *loadValue  `json:"load,omitempty"`
	Rules            []ruleValue `json:"rules,omitempty"`
	PrepareTimeout   string      `json:"prepare_timeout,omitempty"`
	Standbys         int         `json:"standbys,omitempty"`
}

type loadValue struct {
	Tolerance    float64 `json:"tolerance,omitempty"`
	MinResidence string  `json:"min_residence,omitempty"`
	MinGain      float64 `json:"min_gain,omitempty"`
	Patience     string  `json:"patience,omitempty"`
}

func durationValue(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// MarshalJSON writes the policy as P/policy holds it.
func (p BalancePolicy) MarshalJSON() ([]byte, error) {
	v := balanceValue{MaxMovesInFlight: p.MaxMovesInFlight, StuckAfter: durationValue(p.StuckAfter), ColdStartGather: durationValue(p.ColdStartGather),
		PrepareTimeout: durationValue(p.PrepareTimeout), Standbys: p.Standbys}
	if l := p.Load; l != nil {
		v.Load = &loadValue{Tolerance: l.Tolerance, MinResidence: durationValue(l.MinResidence), MinGain: l.MinGain, Patience: durationValue(l.Patience)}
	}
	for _, r := range p.Rules {
		v.Rules = append(v.Rules, ruleValue(r))
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads P/policy's value, saying which field is wrong; a
// well-formed value that Validate refuses is refused too, and so is a
// field it does not know (a misspelt setting would otherwise be followed
// as its default) or null.
func (p *BalancePolicy) UnmarshalJSON(b []byte) error {
	var v balanceValue
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return fmt.Errorf("malformed balance policy: null (want JSON {max_moves_in_flight, stuck_after, cold_start_gather, load, rules, prepare_timeout, standbys})")
	}
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("malformed balance policy (want JSON {max_moves_in_flight, stuck_after, cold_start_gather, load, rules, prepare_timeout, standbys}): %w", err)
	}
	var out BalancePolicy
	var err error
	parse := func(name, s string) time.Duration {
		if s == "" || err != nil {
			return 0
		}
		d, perr := time.ParseDuration(s)
		if perr != nil {
			err = fmt.Errorf("balance policy's %s %q is not a duration (want e.g. \"10s\")", name, s)
		}
		return d
	}
	out.MaxMovesInFlight = v.MaxMovesInFlight
	out.StuckAfter = parse("stuck_after", v.StuckAfter)
	out.ColdStartGather = parse("cold_start_gather", v.ColdStartGather)
	out.PrepareTimeout = parse("prepare_timeout", v.PrepareTimeout)
	out.Standbys = v.Standbys
	if l := v.Load; l != nil {
		out.Load = &LoadBalance{Tolerance: l.Tolerance, MinGain: l.MinGain,
			MinResidence: parse("load min_residence", l.MinResidence), Patience: parse("load patience", l.Patience)}
	}
	if err != nil {
		return err
	}
	for _, r := range v.Rules {
		out.Rules = append(out.Rules, PlacementRule(r))
	}
	if err := out.Validate(); err != nil {
		return err
	}
	*p = out
	return nil
}

package shard

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// LeasePolicy sets how long the coordinator keeps a silent worker's session
// (TTL), how often the worker renews it (RenewEvery), and how long the worker's
// process may be paused without warning (PauseBudget: garbage collection,
// CPU starvation, a stalled disk).
//
// The rule is 2·RenewEvery + PauseBudget ≤ TTL: one renewal may fail and the
// next may arrive late by a whole pause, and the session still has not expired.
// The worker steps down locally at TTL − PauseBudget after the start of its
// last successful renewal, which the rule keeps at least two renewal periods
// away, and which ends before the coordinator could expire the session.
type LeasePolicy struct {
	TTL         time.Duration `json:"ttl"`
	RenewEvery  time.Duration `json:"renew_every"`
	PauseBudget time.Duration `json:"pause_budget"`
}

// DefaultPolicy suits Consul, whose minimum session TTL is 10 s.
var DefaultPolicy = LeasePolicy{TTL: 10 * time.Second, RenewEvery: 2 * time.Second, PauseBudget: 5 * time.Second}

// Validate returns an error wrapping ErrInvalidPolicy that names the numbers
// when the policy breaks the rule or has a non-positive duration. Every
// problem is reported at once.
func (p LeasePolicy) Validate() error {
	var problems []string
	if p.TTL <= 0 {
		problems = append(problems, fmt.Sprintf("ttl %v must be positive", p.TTL))
	}
	if p.RenewEvery <= 0 {
		problems = append(problems, fmt.Sprintf("renew interval %v must be positive", p.RenewEvery))
	}
	if p.PauseBudget < 0 {
		problems = append(problems, fmt.Sprintf("pause budget %v must not be negative", p.PauseBudget))
	}
	if len(problems) == 0 {
		// 2·renew + pause ≤ ttl, computed so that nothing can overflow:
		// every value is non-negative here.
		fits := p.PauseBudget <= p.TTL && p.RenewEvery <= (p.TTL-p.PauseBudget)/2
		switch need := p.Need(); {
		case fits:
		case need == math.MaxInt64:
			problems = append(problems, fmt.Sprintf("2 × renew %v + pause %v reaches the largest duration, far above ttl %v",
				p.RenewEvery, p.PauseBudget, p.TTL))
		default:
			problems = append(problems, fmt.Sprintf("2 × renew %v + pause %v = %v exceeds ttl %v by %v",
				p.RenewEvery, p.PauseBudget, need, p.TTL, need-p.TTL))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidPolicy, strings.Join(problems, "; "))
	}
	return nil
}

// Need is the TTL the policy's renewal interval and pause budget require:
// 2·RenewEvery + PauseBudget. A sum beyond the largest Duration is that
// largest Duration (and one below the smallest, the smallest), so that an
// absurd policy is refused instead of wrapping around to a small need.
func (p LeasePolicy) Need() time.Duration {
	return addSat(addSat(p.RenewEvery, p.RenewEvery), p.PauseBudget)
}

// addSat adds two durations, saturating instead of overflowing.
func addSat(a, b time.Duration) time.Duration {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// StepDownAfter is how long after the start of its last successful renewal a
// worker still acts as owner: TTL − PauseBudget. A worker paused for up to
// PauseBudget right at this moment still wakes before the session's TTL ends.
func (p LeasePolicy) StepDownAfter() time.Duration { return p.TTL - p.PauseBudget }

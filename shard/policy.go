package shard

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// LeasePolicy sets how long the coordinator keeps a silent worker's session
// (TTL), how often the worker renews it (RenewEvery), how long the worker's
// process may be paused without warning (PauseBudget: garbage collection,
// CPU starvation, a stalled disk), and how long the locks of a session that
// ended stay closed to everyone (LockDelay).
//
// Two rules, both checked by Validate:
//
//   - 2·RenewEvery + PauseBudget ≤ TTL: one renewal may fail and the next may
//     arrive late by a whole pause, and the session still has not expired.
//     The worker steps down locally at TTL − PauseBudget after the start of
//     its last successful renewal (StepDownAfter), which the rule keeps at
//     least two renewal periods away, and which ends before the coordinator
//     could expire the session.
//   - LockDelay ≥ TTL − PauseBudget: a session can also end long before its
//     TTL (an operator destroys it, Serf marks its node failed, its check
//     turns critical) while the worker cannot hear of it (cut off from the
//     coordinator). Its locks are then free once the lock-delay has passed,
//     counted from the end, which came after the worker's last successful
//     renewal started; so with this rule nobody can take a shard before the
//     worker's own step-down deadline, whichever way its session ended.
//
// At exactly the minimum lock-delay the old owner's margin to stop is only
// the new owner's acquire and fence round trips; the default, LockDelay =
// TTL, gives it the whole pause budget, as an expiry does.
//
// There is no policy without a lock-delay: the first rule keeps the pause
// budget below the TTL (RenewEvery is positive), so the second always asks
// for a lock-delay of more than zero.
type LeasePolicy struct {
	TTL         time.Duration `json:"ttl"`
	RenewEvery  time.Duration `json:"renew_every"`
	PauseBudget time.Duration `json:"pause_budget"`
	// LockDelay: zero means the default, the TTL (EffectiveLockDelay);
	// never "none", which the second rule forbids.
	LockDelay time.Duration `json:"lock_delay,omitempty"`
}

// DefaultPolicy is the default: a crashed worker's shards are owned again
// about TTL + lock-delay = 8 s later on Consul's check liveness (the
// default) or the embedded coordinator, and a worker rides out pauses of
// up to 2.5 s (CPU starvation, a stalled disk) without stepping down.
// Figures, and the step-downs it cost on a starved machine (none), are in
// docs/tuning.md. Consul's session-TTL liveness refuses TTLs under 10 s:
// use SessionTTLPolicy there.
var DefaultPolicy = LeasePolicy{TTL: 5 * time.Second, RenewEvery: time.Second, PauseBudget: 2500 * time.Millisecond,
	LockDelay: 3 * time.Second}

// SessionTTLPolicy suits Consul's session-TTL liveness, whose minimum
// session TTL is 10 s (and which Consul may let run to twice the TTL): a
// crash is noticed after 10 to 20 s and its shards are owned again a
// lock-delay, the TTL, later. It rides out pauses of up to 5 s.
var SessionTTLPolicy = LeasePolicy{TTL: 10 * time.Second, RenewEvery: 2 * time.Second, PauseBudget: 5 * time.Second}

// FastPolicy is the fast-failover policy for Consul's check liveness (or the
// embedded coordinator): a crash is noticed within about the TTL and its
// shards are owned again about a lock-delay later (2.5 s at most on Consul
// 1.14.8, docs/tuning.md). It satisfies both rules with 200 ms of margin on
// the lock-delay, and it asks for pauses under 900 ms.
var FastPolicy = LeasePolicy{TTL: 1500 * time.Millisecond, RenewEvery: 300 * time.Millisecond,
	PauseBudget: 900 * time.Millisecond, LockDelay: 800 * time.Millisecond}

// EffectiveLockDelay is the lock-delay the policy asks sessions for: LockDelay,
// or the TTL when LockDelay is zero. It is the one place that reads zero.
func (p LeasePolicy) EffectiveLockDelay() time.Duration {
	if p.LockDelay == 0 {
		return p.TTL
	}
	return p.LockDelay
}

// SessionSpec is the session a worker of this policy asks the coordinator
// for: its TTL and its effective lock-delay, sent explicitly.
func (p LeasePolicy) SessionSpec(worker string) SessionSpec {
	return SessionSpec{Worker: worker, TTL: p.TTL, LockDelay: p.EffectiveLockDelay()}
}

// MinLockDelay is the shortest lock-delay the second rule allows: the
// step-down deadline, TTL − PauseBudget.
func (p LeasePolicy) MinLockDelay() time.Duration { return p.StepDownAfter() }

// Validate returns an error wrapping ErrInvalidPolicy that names the numbers
// when the policy breaks a rule or has a non-positive duration. Every
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
	if p.LockDelay < 0 {
		problems = append(problems, fmt.Sprintf("lock-delay %v must not be negative: zero means the default, the ttl, and there is no "+
			"policy without one (it must be at least the step-down deadline ttl − pause, which the first rule keeps above zero)", p.LockDelay))
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
		if ld, least := p.EffectiveLockDelay(), p.MinLockDelay(); p.PauseBudget <= p.TTL && ld < least {
			problems = append(problems, fmt.Sprintf("lock-delay %v is shorter than the step-down deadline ttl %v − pause %v = %v by %v: "+
				"a session ended early (destroyed, its node failed, its check critical) would free the locks while its worker, "+
				"cut off from the coordinator, still acts as owner", ld, p.TTL, p.PauseBudget, least, least-ld))
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

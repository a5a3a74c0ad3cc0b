package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

func (a *app) policy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl policy", flag.ContinueOnError)
	p := shard.DefaultPolicy
	fs.DurationVar(&p.TTL, "ttl", p.TTL, "session TTL: how long a silent worker keeps its shards")
	fs.DurationVar(&p.RenewEvery, "renew", p.RenewEvery, "how often a worker renews its session")
	fs.DurationVar(&p.PauseBudget, "pause", p.PauseBudget, "the longest pause a worker process may suffer unnoticed (GC, CPU starvation, a stalled disk)")
	fs.DurationVar(&p.LockDelay, "lock-delay", 0, "how long a session's shards stay closed after it ends other than by a release (0: the ttl; with no flag at all, the default policy's)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl policy -ttl D -renew D -pause D [-lock-delay D]

Checks a lease policy against its two rules. 2 × renew + pause ≤ ttl: one
renewal may fail and the next may arrive late by a whole pause, and the
session has still not expired. lock-delay ≥ ttl − pause: a session ended
before its TTL (destroyed, its node failed, its check critical) keeps its
shards closed until its worker, even cut off from Consul, has stepped down.
Says by how much each passes or fails and, when one fails, what to change.
Exit status 0 when both pass, 1 when one fails.

`)
		fs.PrintDefaults()
	}
	if _, err := a.parseFlags(fs, args, 0, ""); err != nil {
		return err
	}
	if fs.NFlag() == 0 {
		p = shard.DefaultPolicy // its lock-delay is its own, not the ttl
	}
	var bad []string
	if p.TTL <= 0 {
		bad = append(bad, fmt.Sprintf("-ttl %v must be positive", p.TTL))
	}
	if p.RenewEvery <= 0 {
		bad = append(bad, fmt.Sprintf("-renew %v must be positive", p.RenewEvery))
	}
	if p.PauseBudget < 0 {
		bad = append(bad, fmt.Sprintf("-pause %v must not be negative", p.PauseBudget))
	}
	if p.LockDelay < 0 {
		bad = append(bad, fmt.Sprintf("-lock-delay %v must not be negative (0: the ttl)", p.LockDelay))
	}
	if len(bad) > 0 {
		return usagef("%s", joinProblems(bad))
	}
	if !checkPolicy(a.stdout, p) {
		return errSilent
	}
	return nil
}

func joinProblems(ps []string) string {
	out := ps[0]
	for _, p := range ps[1:] {
		out += "; " + p
	}
	return out
}

// checkPolicy explains both rules for p and reports whether p passes them.
func checkPolicy(w io.Writer, p shard.LeasePolicy) bool {
	need := p.Need()
	lockDelay := p.EffectiveLockDelay()
	ldNote := ""
	if p.LockDelay == 0 {
		ldNote = " (the default: the ttl)"
	}
	fmt.Fprintf(w, "ttl %v · renew every %v · pause budget %v · lock-delay %v%s\n", p.TTL, p.RenewEvery, p.PauseBudget, lockDelay, ldNote)
	fmt.Fprintf(w, "rule 1: 2 × renew + pause ≤ ttl:  2 × %v + %v = %v  vs  ttl %v\n\n", p.RenewEvery, p.PauseBudget, need, p.TTL)
	// The first rule alone: with the default lock-delay the second always
	// holds. Validate is the judge (Need() saturates at the edge).
	first := p
	first.LockDelay = 0
	pass := first.Validate() == nil
	if pass {
		fmt.Fprintf(w, "PASSES with %v to spare.\n", p.TTL-need)
		fmt.Fprintf(w, "A worker acts as owner until %v after the start of its last successful renewal (ttl − pause),\n", p.StepDownAfter())
		fmt.Fprintf(w, "which leaves room for %d renewal attempts; the coordinator cannot expire the session before then.\n",
			int(p.StepDownAfter()/p.RenewEvery))
	} else {
		over := need - p.TTL
		fmt.Fprintf(w, "FAILS by %v: 2 × %v + %v = %v exceeds the ttl %v.\n", over, p.RenewEvery, p.PauseBudget, need, p.TTL)
		fmt.Fprintln(w, "A worker paused for its whole budget right after a failed renewal would still act as owner after")
		fmt.Fprintln(w, "the coordinator expired its session and handed its shards on. Change any one of:")
		fmt.Fprintf(w, "  -ttl %-8v raise the TTL (failover after a crash gets slower)\n", round(need))
		if renew := (p.TTL - p.PauseBudget) / 2; renew > 0 {
			fmt.Fprintf(w, "  -renew %-6v renew more often (more load on the coordinator)\n", floor(renew))
		}
		if pause := p.TTL - 2*p.RenewEvery; pause >= 0 {
			fmt.Fprintf(w, "  -pause %-6v assume shorter pauses (only if you have measured them: shardlease_pause_seconds)\n", floor(pause))
		}
	}
	if pass {
		pass = checkLockDelay(w, p)
	}
	if p.TTL < consul.MinSessionTTL {
		fmt.Fprintf(w, "\nNote: with -consul-liveness ttl, Consul refuses session TTLs below %v; the default liveness check accepts any TTL.\n", consul.MinSessionTTL)
	}
	if lockDelay > consul.MaxLockDelay {
		fmt.Fprintf(w, "\nNote: Consul honours lock-delays up to %v; shardd refuses a longer one on Consul.\n", consul.MaxLockDelay)
	}
	return pass
}

// checkLockDelay explains the second rule, lock-delay ≥ ttl − pause, for a
// policy that passes the first, and reports whether p passes it.
func checkLockDelay(w io.Writer, p shard.LeasePolicy) bool {
	lockDelay, least := p.EffectiveLockDelay(), p.MinLockDelay()
	fmt.Fprintf(w, "\nrule 2: lock-delay ≥ ttl − pause:  lock-delay %v  vs  %v − %v = %v\n\n", lockDelay, p.TTL, p.PauseBudget, least)
	if p.Validate() == nil {
		fmt.Fprintf(w, "PASSES with %v to spare: a session ended before its TTL (destroyed, its node failed, its check critical)\n", lockDelay-least)
		fmt.Fprintln(w, "keeps its shards closed until its worker, even cut off from the coordinator, has stepped down.")
		if lockDelay == least {
			fmt.Fprintln(w, "At exactly the minimum the old owner's margin to stop is only the new owner's acquire and fence round trips;")
			fmt.Fprintln(w, "a lock-delay of the ttl gives it the whole pause budget, as an expiry does.")
		}
		fmt.Fprintf(w, "After a crash a shard is owned again about ttl + lock-delay = %v later.\n", p.TTL+lockDelay)
		return true
	}
	fmt.Fprintf(w, "FAILS by %v: lock-delay %v is shorter than the step-down deadline ttl − pause = %v.\n", least-lockDelay, lockDelay, least)
	fmt.Fprintln(w, "A session ended before its TTL frees its shards after the lock-delay alone, while its worker, cut off from")
	fmt.Fprintln(w, "the coordinator, still acts as owner until its deadline: two workers would run one shard. Change any one of:")
	fmt.Fprintf(w, "  -lock-delay %-4v the least that covers the deadline (crash failover gets slower by %v)\n", least, least-lockDelay)
	if pause := p.TTL - lockDelay; p.TTL-pause >= 2*p.RenewEvery {
		fmt.Fprintf(w, "  -pause %-10v a larger pause budget: the worker steps down earlier (still 2 × renew + pause ≤ ttl)\n", pause)
	}
	return false
}

// round rounds a needed duration up to a tidy value (whole milliseconds).
func round(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}

// floor rounds a limit down to whole milliseconds, so that it still passes.
func floor(d time.Duration) time.Duration { return d.Truncate(time.Millisecond) }

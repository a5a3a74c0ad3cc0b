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
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl policy -ttl D -renew D -pause D

Checks a lease policy against the rule 2 × renew + pause ≤ ttl: one renewal
may fail and the next may arrive late by a whole pause, and the session has
still not expired. Says by how much it passes or fails and, when it fails,
what to change. Exit status 0 when it passes, 1 when it fails.

`)
		fs.PrintDefaults()
	}
	if _, err := a.parseFlags(fs, args, 0, ""); err != nil {
		return err
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

// checkPolicy explains the rule for p and reports whether p passes.
func checkPolicy(w io.Writer, p shard.LeasePolicy) bool {
	need := p.Need()
	fmt.Fprintf(w, "ttl %v · renew every %v · pause budget %v\n", p.TTL, p.RenewEvery, p.PauseBudget)
	fmt.Fprintf(w, "rule: 2 × renew + pause ≤ ttl:  2 × %v + %v = %v  vs  ttl %v\n\n", p.RenewEvery, p.PauseBudget, need, p.TTL)
	pass := p.Validate() == nil // the rule itself: Need() saturates, so comparing it with the TTL is not enough at the edge
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
	if p.TTL < consul.MinSessionTTL {
		fmt.Fprintf(w, "\nNote: with -consul-liveness ttl, Consul refuses session TTLs below %v; the default liveness check accepts any TTL.\n", consul.MinSessionTTL)
	}
	return pass
}

// round rounds a needed duration up to a tidy value (whole milliseconds).
func round(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}

// floor rounds a limit down to whole milliseconds, so that it still passes.
func floor(d time.Duration) time.Duration { return d.Truncate(time.Millisecond) }

package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/shard"
)

// balanceFlags are shardctl balance's settings; set records which ones
// the command line named, the only ones written.
type balanceFlags struct {
	moves               int
	stuckAfter, gather  time.Duration
	by                  string
	tolerance, gain     float64
	residence, patience time.Duration
	prepare             time.Duration
	standbys            int
	set                 map[string]bool
}

// loadFlags are the settings that mean something only for load balancing.
var loadFlags = []string{"tolerance", "residence", "gain", "patience"}

func (a *app) balance(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl balance", flag.ContinueOnError)
	conn := a.connFlags(fs)
	var b balanceFlags
	fs.IntVar(&b.moves, "moves", 0, "hand-offs in flight across the fleet at most (0: one member's share, at least 16)")
	fs.DurationVar(&b.stuckAfter, "stuck-after", 0, "how long a worker given free shards may take none before it is judged stuck (0: the default)")
	fs.DurationVar(&b.gather, "gather", 0, "how long a cold fleet waits for its members to stop joining before placing (0: 10s; negative: at once)")
	fs.StringVar(&b.by, "by", "", "what is balanced: count (shards per worker) or load (the loads handlers report)")
	fs.Float64Var(&b.tolerance, "tolerance", 0, "with -by load: the band around the mean load per capacity, a fraction (0.1: ±10 %; 0: the default)")
	fs.DurationVar(&b.residence, "residence", 0, "with -by load: how long a moved shard stays put before it may move for load again (0: the default)")
	fs.Float64Var(&b.gain, "gain", 0, "with -by load: how much of a gap a move must close, a fraction (0: the default)")
	fs.DurationVar(&b.patience, "patience", 0, "with -by load: how long a worker stays outside the band before it is corrected (0: the default)")
	fs.IntVar(&b.standbys, "standbys", 0, "standbys for failover per shard, on other workers whose handler has a standby side (0: none; at most 3)")
	fs.DurationVar(&b.prepare, "prepare-timeout", 0, "how long a warm move waits for its target's standby to be ready before it moves the shard cold (0: a minute; at most 1h)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl balance -prefix P [-moves N] [-stuck-after D] [-gather D] [-prepare-timeout D] [-standbys K]
                        [-by count|load] [-tolerance F] [-residence D] [-gain F] [-patience D]

Shows the fleet's balance policy, or changes the settings named on the
command line and keeps the others. The policy is stored in the fleet's keys
(P/policy) and followed live by whichever worker is the assignor, from its
next step: no worker restarts. A fleet that stores none follows its
assignor's own configuration; the first worker configured away from the
defaults stores its own. Two operators changing it at once: the last write
wins, and this command prints what it replaced.

`)
		fs.PrintDefaults()
	}
	if _, err := a.parseFlags(fs, args, 0, ""); err != nil {
		return err
	}
	b.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { b.set[f.Name] = true })
	if err := b.check(); err != nil {
		return err
	}
	fc, err := a.open(conn)
	if err != nil {
		return err
	}
	defer fc.close()
	snap, err := fc.snapshot(ctx)
	if err != nil {
		return err
	}
	if !b.changes() {
		a.showBalance(fc.name, snap)
		return nil
	}
	var old shard.BalancePolicy
	if snap.Policy != nil {
		old = *snap.Policy
	} else if !b.set["by"] {
		// The assignor then follows its own worker's flags, which this
		// command cannot see: a partial change would silently turn a
		// fleet balancing load into one balancing counts.
		return usagef("fleet %s stores no readable balance policy (its assignor follows its own worker's flags): name what it balances with -by count or -by load along with the other settings", fc.name)
	}
	p, err := b.apply(old)
	if err != nil {
		return err
	}
	if err := admin.PolicyReadable(snap, fc.name, p); err != nil {
		return usagef("%v", err)
	}
	if _, err := fc.coord.Fleet().SetPolicy(ctx, p, false); err != nil {
		return fc.explain(err, "write")
	}
	was := "none stored (the assignor followed its own configuration)"
	if snap.Policy != nil {
		was = old.String()
	}
	fmt.Fprintf(a.stdout, "fleet %s balance policy set: %s\n  was: %s\nthe assignor follows it from its next step\n", fc.name, p, was)
	return nil
}

// changes reports whether the command line sets anything (not just the
// connection).
func (b balanceFlags) changes() bool {
	for _, name := range append([]string{"moves", "stuck-after", "gather", "by", "prepare-timeout", "standbys"}, loadFlags...) {
		if b.set[name] {
			return true
		}
	}
	return false
}

// check refuses values that cannot be stored, naming each flag and value,
// before anything is read.
func (b balanceFlags) check() error {
	var bad []string
	if b.set["moves"] && b.moves < 0 {
		bad = append(bad, fmt.Sprintf("-moves %d must not be negative (0: one member's share, at least 16)", b.moves))
	}
	if b.set["stuck-after"] && b.stuckAfter < 0 {
		bad = append(bad, fmt.Sprintf("-stuck-after %v must not be negative (0: the default)", b.stuckAfter))
	}
	if b.set["prepare-timeout"] && (b.prepare < 0 || b.prepare > shard.MaxPrepareTimeout) {
		bad = append(bad, fmt.Sprintf("-prepare-timeout %v must be between 0 (the default, a minute) and %v", b.prepare, shard.MaxPrepareTimeout))
	}
	if b.set["standbys"] && (b.standbys < 0 || b.standbys > shard.MaxStandbys) {
		bad = append(bad, fmt.Sprintf("-standbys %d must be between 0 (none) and %d", b.standbys, shard.MaxStandbys))
	}
	if b.set["by"] && b.by != "count" && b.by != "load" {
		bad = append(bad, fmt.Sprintf("-by %q must be count or load", b.by))
	}
	for name, v := range map[string]float64{"tolerance": b.tolerance, "gain": b.gain} {
		if b.set[name] && !(v >= 0 && v < 1) {
			bad = append(bad, fmt.Sprintf("-%s %v must be a fraction in [0, 1) (0.1: 10 %%; 0: the default)", name, v))
		}
	}
	for name, v := range map[string]time.Duration{"residence": b.residence, "patience": b.patience} {
		if b.set[name] && v < 0 {
			bad = append(bad, fmt.Sprintf("-%s %v must not be negative (0: the default)", name, v))
		}
	}
	if b.by == "count" {
		for _, name := range loadFlags {
			if b.set[name] {
				bad = append(bad, fmt.Sprintf("-%s tunes load balancing and cannot go with -by count", name))
			}
		}
	}
	if len(bad) > 0 {
		return usagef("%s", joinProblems(bad))
	}
	return nil
}

// apply is old with the settings the command line names.
func (b balanceFlags) apply(old shard.BalancePolicy) (shard.BalancePolicy, error) {
	p := old.Clone()
	if b.set["moves"] {
		p.MaxMovesInFlight = b.moves
	}
	if b.set["stuck-after"] {
		p.StuckAfter = b.stuckAfter
	}
	if b.set["gather"] {
		p.ColdStartGather = b.gather
	}
	if b.set["prepare-timeout"] {
		p.PrepareTimeout = b.prepare
	}
	if b.set["standbys"] {
		p.Standbys = b.standbys
	}
	switch {
	case b.by == "count":
		p.Load = nil
	case b.by == "load" && p.Load == nil:
		p.Load = &shard.LoadBalance{}
	}
	var loadOnly []string
	for _, name := range loadFlags {
		if b.set[name] {
			loadOnly = append(loadOnly, "-"+name)
		}
	}
	if len(loadOnly) > 0 && p.Load == nil {
		return p, usagef("%s tune load balancing, and the fleet balances shard counts: add -by load", strings.Join(loadOnly, ", "))
	}
	if l := p.Load; l != nil {
		if b.set["tolerance"] {
			l.Tolerance = b.tolerance
		}
		if b.set["residence"] {
			l.MinResidence = b.residence
		}
		if b.set["gain"] {
			l.MinGain = b.gain
		}
		if b.set["patience"] {
			l.Patience = b.patience
		}
	}
	return p, p.Validate()
}

// showBalance prints the stored policy, or why there is none to follow.
func (a *app) showBalance(name string, snap shard.Snapshot) {
	if snap.Policy != nil {
		fmt.Fprintf(a.stdout, "fleet %s balance policy: %s\n", name, snap.Policy)
		return
	}
	for _, p := range snap.Problems {
		if strings.Contains(p, "not a balance policy") {
			fmt.Fprintf(a.stdout, "fleet %s stores a balance policy that cannot be read: %s\nthe assignor follows its own worker's flags until one is set with 'shardctl balance -prefix %s -by count|load' and any other settings\n", name, p, name)
			return
		}
	}
	fmt.Fprintf(a.stdout, "fleet %s stores no balance policy: the assignor follows its own worker's flags (the defaults unless it was started with others)\nset one with 'shardctl balance -prefix %s -by count|load' and any other settings\n",
		name, name)
}

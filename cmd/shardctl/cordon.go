package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/shard"
)

// byFlag adds --by, who the command records as having set a cordon or a
// freeze.
func byFlag(fs *flag.FlagSet) *string {
	return fs.String("by", "", "who sets it, recorded in the fleet and shown by status and the dashboard (default $SHARDLEASE_OPERATOR, else $USER@host)")
}

// operatorName is who the command records: --by, else
// SHARDLEASE_OPERATOR, else USER (or LOGNAME) at this host.
func (a *app) operatorName(by string) (string, error) {
	if by != "" {
		return by, nil
	}
	if v := a.getenv("SHARDLEASE_OPERATOR"); v != "" {
		return v, nil
	}
	user := a.getenv("USER")
	if user == "" {
		user = a.getenv("LOGNAME")
	}
	if user == "" {
		return "", usagef("cannot tell who you are to record it (no $USER): pass --by NAME or set SHARDLEASE_OPERATOR")
	}
	if host, err := os.Hostname(); err == nil && host != "" {
		return user + "@" + host, nil
	}
	return user, nil
}

// openAsOperator is openFleet for the commands that record who acts: it
// finds the name (refusing the command line before connecting when there
// is none) and returns the fleet's Operator acting as it.
func (a *app) openAsOperator(fs *flag.FlagSet, conn *connFlags, by *string, args []string, nargs int, what string) ([]string, *fleetConn, admin.Operator, error) {
	return a.openAsOperatorUpTo(fs, conn, by, args, nargs, nargs, what)
}

// openAsOperatorUpTo is openAsOperator with optional positional arguments
// (parseFlagsUpTo).
func (a *app) openAsOperatorUpTo(fs *flag.FlagSet, conn *connFlags, by *string, args []string, least, most int, what string) ([]string, *fleetConn, admin.Operator, error) {
	pos, err := a.parseFlagsUpTo(fs, args, least, most, what)
	if err != nil {
		return nil, nil, admin.Operator{}, err
	}
	who, err := a.operatorName(*by)
	if err != nil {
		return nil, nil, admin.Operator{}, err
	}
	fc, err := a.open(conn)
	if err != nil {
		return nil, nil, admin.Operator{}, err
	}
	op := fc.operator(a)
	op.By = who
	return pos, fc, op, nil
}

func (a *app) cordon(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl cordon", flag.ContinueOnError)
	conn := a.connFlags(fs)
	by, reason := byFlag(fs), fs.String("reason", "", "why, recorded with the cordon")
	zone := zoneFlag(fs, "cordon every live worker of zone Z (maintenance of a zone), instead of one WORKER")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl cordon -prefix P [--reason R] [flags] WORKER | --zone Z

Cordons WORKER: it keeps the shards it has and the assignor gives it nothing
new, so nothing moves now. Use it before a drain, or on a sick machine you
want to stop loading without moving its work yet. The cordon is stored in
the worker's member key with who set it and when: it survives the worker's
restart and a change of assignor. 'shardctl uncordon WORKER' lifts it.
With --zone Z, every live worker of zone Z is cordoned.

`)
		fs.PrintDefaults()
	}
	pos, fc, op, err := a.openAsOperatorUpTo(fs, conn, by, args, 0, 1, "WORKER")
	if err != nil {
		return err
	}
	defer fc.close()
	worker, err := workerOrZone(pos, zone)
	if err != nil {
		return err
	}
	if worker == "" {
		cs, err := op.CordonZone(ctx, zone.name, *reason)
		for _, c := range cs {
			a.saidCordon(c)
		}
		return fc.explain(err, "read")
	}
	c, err := op.Cordon(ctx, worker, *reason)
	if err != nil {
		return fc.explain(err, "read")
	}
	a.saidCordon(c)
	return nil
}

// saidCordon prints what a cordon did.
func (a *app) saidCordon(c admin.Cordon) {
	now := a.now()
	if !c.Changed {
		fmt.Fprintf(a.stdout, "%s is already cordoned %s; nothing to do\n", c.Worker, markText(c.Mark, now))
		return
	}
	fmt.Fprintf(a.stdout, "%s cordoned %s: it keeps its %d shards and is given nothing new ('shardctl uncordon %s' lifts it)\n",
		c.Worker, markText(c.Mark, now), c.Shards, c.Worker)
}

// zoneArg is --zone: the zone named, and whether the flag was given at
// all (an empty --zone is given, and refused).
type zoneArg struct {
	name  string
	given bool
}

// zoneFlag adds --zone, which names a zone instead of one worker.
func zoneFlag(fs *flag.FlagSet, help string) *zoneArg {
	z := &zoneArg{}
	fs.Func("zone", help, func(v string) error {
		if v == "" {
			return errors.New(`an empty zone names no zone (workers without --zone are not one)`)
		}
		z.name, z.given = v, true
		return nil
	})
	return z
}

// workerOrZone is the worker a command names, or "" with a zone: one of
// the two, not both.
func workerOrZone(pos []string, zone *zoneArg) (string, error) {
	switch {
	case zone.given && len(pos) == 1:
		return "", usagef("give WORKER or --zone, not both (%q and --zone %q)", pos[0], zone.name)
	case !zone.given && len(pos) == 0:
		return "", usagef("missing WORKER (or --zone Z for every live worker of a zone)")
	case zone.given:
		return "", nil
	}
	return pos[0], nil
}

func (a *app) uncordon(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl uncordon", flag.ContinueOnError)
	conn := a.connFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: shardctl uncordon -prefix P [flags] WORKER | --zone Z\n\nLifts a cordon: the worker (with --zone, every live worker of the zone) is given its share of shards again within a few rounds.\n\n")
		fs.PrintDefaults()
	}
	zone := zoneFlag(fs, "lift the cordon of every live worker of zone Z, instead of one WORKER")
	pos, fc, err := a.openFleetUpTo(fs, conn, args, 0, 1, "WORKER")
	if err != nil {
		return err
	}
	defer fc.close()
	worker, err := workerOrZone(pos, zone)
	if err != nil {
		return err
	}
	var cs []admin.Cordon
	if worker == "" {
		cs, err = fc.operator(a).UncordonZone(ctx, zone.name)
	} else {
		var c admin.Cordon
		if c, err = fc.operator(a).Uncordon(ctx, worker); err == nil {
			cs = append(cs, c)
		}
	}
	for _, c := range cs {
		if !c.Changed {
			fmt.Fprintf(a.stdout, "%s is not cordoned (it owns %d shards); nothing to do\n", c.Worker, c.Shards)
			continue
		}
		fmt.Fprintf(a.stdout, "cordon of %s lifted: it is given its share of shards again within a few rebalance rounds\n", c.Worker)
	}
	return fc.explain(err, "read")
}

// markText says who set a state, when and why: "by alice since 12:00:08
// (3m12s ago): bad disk".
func markText(m *shard.Mark, now time.Time) string {
	if m == nil {
		return ""
	}
	by := m.By
	if by == "" {
		by = "(unknown: the key cannot be read)"
	}
	s := fmt.Sprintf("by %s since %s", by, stamp(m.At, now))
	if m.Reason != "" {
		s += ": " + m.Reason
	}
	return s
}

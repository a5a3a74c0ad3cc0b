package main

import (
	"context"
	"flag"
	"fmt"
)

func (a *app) freeze(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl freeze", flag.ContinueOnError)
	conn := a.connFlags(fs)
	by, reason := byFlag(fs), fs.String("reason", "", "why, recorded with the freeze")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl freeze -prefix P [--reason R] [flags]

Freezes the fleet's rebalancing: the assignor starts no hand-off between live
workers (no rebalancing after a join, no drain), and still places shards no
live worker holds, so a crashed worker's shards are failed over as usual.
Hand-offs already in flight finish. Use it for maintenance or during an
incident. The freeze is stored in the fleet's keys with who set it and when:
it outlives this command and any assignor. 'shardctl unfreeze' lifts it.

`)
		fs.PrintDefaults()
	}
	_, fc, op, err := a.openAsOperator(fs, conn, by, args, 0, "")
	if err != nil {
		return err
	}
	defer fc.close()
	f, err := op.Freeze(ctx, *reason)
	if err != nil {
		return fc.explain(err, "read")
	}
	if !f.Changed {
		fmt.Fprintf(a.stdout, "fleet %s is already frozen %s; nothing to do\n", fc.name, markText(f.Mark, a.now()))
		return nil
	}
	fmt.Fprintf(a.stdout, "fleet %s frozen %s: no rebalancing moves start until 'shardctl unfreeze'; crashed workers' shards are still failed over\n",
		fc.name, markText(f.Mark, a.now()))
	return nil
}

func (a *app) unfreeze(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl unfreeze", flag.ContinueOnError)
	conn := a.connFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: shardctl unfreeze -prefix P [flags]\n\nLifts the freeze: rebalancing resumes, as many hand-offs at a time as the fleet's move budget allows.\n\n")
		fs.PrintDefaults()
	}
	_, fc, err := a.openFleet(fs, conn, args, 0, "")
	if err != nil {
		return err
	}
	defer fc.close()
	f, err := fc.operator(a).Unfreeze(ctx)
	if err != nil {
		return fc.explain(err, "read")
	}
	if !f.Changed {
		fmt.Fprintf(a.stdout, "fleet %s is not frozen; nothing to do\n", fc.name)
		return nil
	}
	fmt.Fprintf(a.stdout, "fleet %s unfrozen (it was frozen %s): rebalancing resumes, as many hand-offs at a time as the move budget allows\n",
		fc.name, markText(f.Mark, a.now()))
	return nil
}

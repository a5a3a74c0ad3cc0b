package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/shard"
)

func (a *app) drain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl drain", flag.ContinueOnError)
	conn := a.connFlags(fs)
	noWait := fs.Bool("no-wait", false, "set the drain and return; do not follow its progress")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up waiting after this long (the drain stays set); 0 waits forever")
	zone := zoneFlag(fs, "drain every live worker of zone Z (maintenance of a zone: its shards move to the other zones in proportion), instead of one WORKER")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl drain -prefix P [flags] WORKER | --zone Z

Asks WORKER to hand off all of its shards gracefully: sets Draining on its
member key, so the assignor gives it no shards and the worker releases its
shards a few per rebalance round, each to its designated new owner, after
its handler has committed. Shows progress until the worker owns nothing.
The worker stays a live member (stop its process when it is done) and keeps
the drain if it rejoins; 'shardctl undrain WORKER' withdraws it. With --zone Z,
every live worker of zone Z is drained, and progress is shown worker by worker.

`)
		fs.PrintDefaults()
	}
	pos, fc, err := a.openFleetUpTo(fs, conn, args, 0, 1, "WORKER")
	if err != nil {
		return err
	}
	defer fc.close()
	worker, err := workerOrZone(pos, zone)
	if err != nil {
		return err
	}
	if worker == "" {
		ds, err := fc.operator(a).DrainZone(ctx, zone.name)
		for _, d := range ds {
			fmt.Fprintf(a.stdout, "drain of %s (zone %s) set: it owns %d shards\n", d.Worker, zone.name, len(d.Shards))
		}
		if !*noWait {
			for _, d := range ds { // the drains that were set, even if some were not
				if ferr := a.followDrain(ctx, fc, d, *timeout); ferr != nil {
					return errors.Join(ferr, fc.explain(err, "read"))
				}
			}
		}
		return fc.explain(err, "read")
	}

	d, err := fc.operator(a).Drain(ctx, worker)
	if err != nil {
		return fc.explain(err, "read")
	}
	if *noWait {
		fmt.Fprintf(a.stdout, "drain of %s set: it owns %d shards and hands them off as the fleet's move budget allows ('shardctl status' shows progress)\n", d.Worker, len(d.Shards))
		return nil
	}
	fmt.Fprintf(a.stdout, "draining %s (%d shards, session %s): the assignor gives it no shards; it hands them off as the fleet's move budget allows\n",
		d.Worker, len(d.Shards), short(string(d.Session)))
	return a.followDrain(ctx, fc, d, *timeout)
}

func (a *app) undrain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl undrain", flag.ContinueOnError)
	conn := a.connFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: shardctl undrain -prefix P [flags] WORKER | --zone Z\n\nWithdraws a drain: the worker (with --zone, every live worker of the zone) takes its share of shards again within a few rounds.\n\n")
		fs.PrintDefaults()
	}
	zone := zoneFlag(fs, "withdraw the drain of every live worker of zone Z, instead of one WORKER")
	pos, fc, err := a.openFleetUpTo(fs, conn, args, 0, 1, "WORKER")
	if err != nil {
		return err
	}
	defer fc.close()
	worker, err := workerOrZone(pos, zone)
	if err != nil {
		return err
	}
	var ds []admin.Drain
	if worker == "" {
		ds, err = fc.operator(a).UndrainZone(ctx, zone.name)
	} else {
		var d admin.Drain
		if d, err = fc.operator(a).Undrain(ctx, worker); err == nil {
			ds = append(ds, d)
		}
	}
	for _, d := range ds {
		if !d.Changed {
			fmt.Fprintf(a.stdout, "%s is not draining (it owns %d shards); nothing to do\n", d.Worker, len(d.Shards))
			continue
		}
		fmt.Fprintf(a.stdout, "drain of %s withdrawn: it takes a share of shards again within a few rebalance rounds\n", d.Worker)
	}
	return fc.explain(err, "read")
}

// followDrain prints progress whenever it changes, until the worker owns
// nothing and every shard it owned at the start has a new live owner.
func (a *app) followDrain(ctx context.Context, fc *fleetConn, d admin.Drain, timeout time.Duration) error {
	start := a.now()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	id := d.Worker
	var lastErr string
	p, err := fc.operator(a).FollowDrain(ctx, d, func(p admin.DrainProgress) {
		lastErr = ""
		fmt.Fprintf(a.stdout, "  %s: %3d shards left  %s  %d/%d with their new owners (%s)\n", id, p.Left, bar(p.Moved, p.Total), p.Moved, p.Total, ago(a.now().Sub(start)))
	}, func(err error) bool {
		if errors.Is(err, shard.ErrPermissionDenied) {
			return false
		}
		if msg := oneLine(fc.explain(err, "read")); msg != lastErr {
			fmt.Fprintf(a.stderr, "shardctl drain: %s; retrying\n", msg)
			lastErr = msg
		}
		return true
	})
	switch {
	case err == nil:
		fmt.Fprintf(a.stdout, "%s drained in %s: it owns no shards and all %d have new owners. It is still a live member: stop its process, or run 'shardctl undrain %s'\n",
			id, ago(a.now().Sub(start)), p.Total, id)
		return nil
	case errors.Is(err, admin.ErrWorkerLeft):
		fmt.Fprintf(a.stdout, "%s left the fleet (its session ended) before the drain finished; the others take over what it held\n", id)
		return nil
	case errors.Is(err, admin.ErrDrainWithdrawn):
		return fmt.Errorf("the drain of %s was withdrawn (someone ran 'shardctl undrain %s')", id, id)
	case errors.Is(err, admin.ErrDrainUnfinished) && errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s still owns %d shards after %v (%d/%d with new owners); the drain stays set: is the worker running a version that honours drains?", id, p.Left, timeout, p.Moved, p.Total)
	case errors.Is(err, admin.ErrDrainUnfinished):
		return fmt.Errorf("stopped waiting: %s still owns %d shards (%d/%d with new owners); the drain stays set ('shardctl status' shows progress)", id, p.Left, p.Moved, p.Total)
	}
	return fc.explain(err, "read")
}

// bar is a progress bar of n out of total.
func bar(n, total int) string {
	const width = 20
	if total <= 0 {
		return "[" + strings.Repeat("#", width) + "]"
	}
	k := n * width / total
	return "[" + strings.Repeat("#", k) + strings.Repeat(".", width-k) + "]"
}

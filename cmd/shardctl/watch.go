package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/shard"
)

func (a *app) watch(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl watch", flag.ContinueOnError)
	conn := a.connFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object per event (fleetview.Event), one per line")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl watch -prefix P [-json] [flags]

Follows the fleet with Consul blocking queries and prints every ownership
change with its reason (acquired, released, expired) and every membership
change (joined, left, draining) and assignor change (elected, vacated), then
the fleet in one line. Ctrl-C stops. Changes closer together than one
blocking query (at most one every 250 ms) show as one.

`)
		fs.PrintDefaults()
	}
	_, fc, err := a.openFleet(fs, conn, args, 0, "")
	if err != nil {
		return err
	}
	defer fc.close()
	// The first read decides whether there is a fleet to watch at all.
	first, err := fc.snapshot(ctx)
	if err != nil {
		return err
	}
	tracker := fleetview.NewTracker(1)
	tracker.Observe(first, a.now())
	enc := json.NewEncoder(a.stdout)
	if !*asJSON {
		f := fleetview.Build(fleetview.Input{Name: fc.name, Snapshot: first, Now: a.now()})
		fmt.Fprintf(a.stdout, "watching %s (Ctrl-C to stop): %d shards · %s · index %d\n", fc.name, f.Summary.Shards, headline(f), f.Index)
		fmt.Fprintf(a.stdout, "%12s  assignor: %s\n", "·", assignorLine(f.Assignor, a.now()))
	}

	var lastErr string
	// Follow from the snapshot just shown: the first listing blocks until
	// the fleet changes past it, at fleetview's rate.
	opts := shard.FollowOptions{MinSpacing: fleetview.MinSpacing, After: first.Index, OnError: func(err error) bool {
		if errors.Is(err, shard.ErrPermissionDenied) {
			return false
		}
		if msg := oneLine(fc.explain(err, "read")); msg != lastErr {
			fmt.Fprintf(a.stderr, "shardctl watch: %s; retrying\n", msg)
			lastErr = msg
		}
		return true
	}}
	err = shard.Follow(ctx, fc.coord.Fleet().Watch, opts, func(s shard.Snapshot) (time.Time, error) {
		if lastErr != "" {
			fmt.Fprintf(a.stderr, "shardctl watch: back in contact with %s\n", fc.addr)
			lastErr = ""
		}
		now := a.now()
		evs := tracker.Observe(s, now)
		for _, e := range evs {
			if *asJSON {
				if err := enc.Encode(e); err != nil {
					return time.Time{}, err
				}
				continue
			}
			fmt.Fprintf(a.stdout, "%s  %s\n", e.At.In(now.Location()).Format("15:04:05.000"), e)
		}
		if len(evs) > 0 && !*asJSON {
			f := fleetview.Build(fleetview.Input{Name: fc.name, Snapshot: s, Now: now})
			fmt.Fprintf(a.stdout, "%12s  %s\n", "·", headline(f))
		}
		return time.Time{}, nil
	})
	return fc.explain(err, "read")
}

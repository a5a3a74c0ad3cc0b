package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/shard"
)

func (a *app) recoverFleet(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl recover", flag.ContinueOnError)
	conn := a.connFlags(fs)
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	force := fs.Bool("force", false, "raise the generation even when no floor is above the coordinator's history")
	wait := fs.Duration("wait", time.Minute, "how long to wait for every shard to be owned again (0: do not wait)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl recover -prefix P -offsets STORE [flags]

Recovers a fleet whose coordinator lost its history (Consul rebuilt empty, or
restored from an older snapshot): its tokens restart below the floors the
offsets store holds, every new claim's fence is refused, and no shard runs.
It reads every shard's checkpoint from STORE (a postgres:// URL, or "consul"),
says which floors are above what the coordinator can grant, and after a
confirmation raises the fleet's generation above every token in the store:
the workers' next claims fence again, within their retry pause (at most 10 s).

Run it only once every process of the fleet uses this coordinator. A process
still attached to another one (the old Consul, reachable from some machines)
keeps running its shards until a worker here claims them; from then on the
store refuses its commits. Nothing the store fences is ever written twice.

`)
		fs.PrintDefaults()
	}
	_, fc, err := a.openFleet(fs, conn, args, 0, "")
	if err != nil {
		return err
	}
	defer fc.close()
	if fc.offsets == nil {
		return usagef("-offsets is required: the fleet's offsets store (a postgres:// URL, or consul), whose floors the recovery must pass")
	}
	op := fc.operator(a)
	r, err := op.CheckRecovery(ctx, fc.offsets)
	if err != nil {
		return fc.explain(err, "read")
	}
	shards := r.Config.Shards
	if len(r.Behind) == 0 && !*force {
		fmt.Fprintf(a.stdout, "fleet %s: no offsets floor is above what the coordinator can grant (generation %d; highest token in the store %d): nothing to recover\n",
			fc.name, r.From, r.Highest)
		return nil
	}
	if len(r.Behind) > 0 {
		fmt.Fprintf(a.stdout, "fleet %s: %d of %d shards have offsets floors above every token this coordinator can grant in generation %d (highest %s): "+
			"its history is older than the store's, and their claims are refused.\n\n", fc.name, len(r.Behind), shards, r.From, describeToken(r.Highest))
	}
	fmt.Fprintf(a.stdout, `Recovery raises the fleet's generation from %d to %d: every claim taken afterwards
carries a token above every token in the store, and fences again. Every process
of the fleet must now use this coordinator: one still attached to another keeps
running its shards until a worker here claims them, and is refused from then on.

`, r.From, r.To)
	if !*yes && !a.confirm(fmt.Sprintf("Raise fleet %s's generation to %d?", fc.name, r.To)) {
		return fmt.Errorf("fleet %s not recovered: not confirmed (answer y, or pass -yes)", fc.name)
	}
	began := time.Now()
	r, err = op.Recover(ctx, fc.offsets, *force)
	if err != nil {
		return fc.explain(err, "read")
	}
	fmt.Fprintf(a.stdout, "fleet %s: generation raised from %d to %d\n", fc.name, r.From, r.Config.Generation)
	if *wait <= 0 {
		return nil
	}
	return a.awaitRecovered(ctx, fc, r, began, *wait)
}

// awaitRecovered follows the fleet until admin.Recovered holds, printing
// how many of the shards that were behind are owned again, or until wait
// has passed.
func (a *app) awaitRecovered(ctx context.Context, fc *fleetConn, r admin.Recovery, began time.Time, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	gen, last := r.Config.Generation, -1
	err := shard.Follow(ctx, fc.coord.Fleet().Watch, shard.FollowOptions{MinSpacing: 250 * time.Millisecond}, func(s shard.Snapshot) (time.Time, error) {
		owned := 0
		for _, st := range s.Shards {
			if floor, behind := r.Floors[st.Shard]; st.Held() && behind && st.Token >= floor {
				owned++
			}
		}
		if owned != last {
			fmt.Fprintf(a.stdout, "  %d of the %d shards behind owned again (%.1f s)\n", owned, len(r.Behind), time.Since(began).Seconds())
			last = owned
		}
		if admin.Recovered(s, r) {
			return time.Time{}, errDone
		}
		return time.Time{}, nil
	})
	switch {
	case errors.Is(err, errDone):
		fmt.Fprintf(a.stdout, "fleet %s: every shard owned again, %.1f s after the recovery\n", fc.name, time.Since(began).Seconds())
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("fleet %s: %d of the %d shards behind owned again after %v (generation %d); see 'shardctl status' for the rest (workers retry refused shards every 10 s at most)",
			fc.name, max(last, 0), len(r.Behind), wait, gen)
	default:
		return fc.explain(err, "read")
	}
}

// describeToken shows a token with its generation and index.
func describeToken(t shard.Token) string {
	return fmt.Sprintf("%d: generation %d, index %d", t, t.Generation(), t.Index())
}

// errDone ends awaitGeneration's follow once every shard is owned.
var errDone = errors.New("done")

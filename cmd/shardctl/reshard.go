package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/shard"
)

func (a *app) reshard(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl reshard", flag.ContinueOnError)
	conn := a.connFlags(fs)
	by, reason := byFlag(fs), fs.String("reason", "", "why, recorded with the reshard or its cancel")
	to := fs.Int("to", 0, "start a reshard to this many shards")
	name := fs.String("name", "", "with -to: the new shards' name stem (default: the first one's with .r<N>)")
	lineage := fs.String("lineage", string(shard.LineageMod), "with -to: how keys map from old to new shards: mod (hash modulo the count: Kafka, JetStream) or range (even hash ranges: Kinesis)")
	cancel := fs.Bool("cancel", false, "cancel the reshard in progress (only before any new shard opened)")
	wait := fs.Bool("wait", false, "follow the reshard until it is done, printing its progress")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl reshard -prefix P [-to N [-name STEM] [-lineage mod|range] [-wait]] [-cancel] [flags]

Changes the fleet's shard count while it runs. Every current shard becomes a
parent: its owner's handler is told to run it to its end (where the producer
switched to the new layout) and close it. Each new shard, a child, starts
only once all its parents are closed, with their final offsets, so no key is
processed out of order. Shards keep running until they close; nothing else
moves. Without -to or -cancel it shows the reshard in progress.

Switch the producer to the new partitioning (and mark the switch in each old
partition) when you start it: the parents close at that mark. A reshard can
be cancelled until the first child opens. docs/operations.md, "Resharding".

`)
		fs.PrintDefaults()
	}
	_, fc, err := a.openFleet(fs, conn, args, 0, "")
	if err != nil {
		return err
	}
	defer fc.close()
	op := fc.operator(a)
	if *to != 0 || *cancel { // a change records who made it
		if op.By, err = a.operatorName(*by); err != nil {
			return err
		}
	}
	switch {
	case *to != 0 && *cancel:
		return usagef("give -to N to start a reshard or -cancel to cancel one, not both")
	case *to != 0:
		l := shard.Lineage(*lineage)
		if l != shard.LineageMod && l != shard.LineageRange {
			return usagef("-lineage %q is neither %q nor %q", *lineage, shard.LineageMod, shard.LineageRange)
		}
		stored, err := op.Reshard(ctx, admin.ReshardPlan{Shards: *to, Name: *name, Lineage: l, Reason: *reason})
		if err != nil {
			return fc.explain(err, "read")
		}
		n, stem := stored.Current()
		fmt.Fprintf(a.stdout, "fleet %s resharding to %d shards named %s-…: each current shard closes at its end, then its children start\n", fc.name, n, stem)
	case *cancel:
		if _, err := op.CancelReshard(ctx, *reason); err != nil {
			return fc.explain(err, "read")
		}
		fmt.Fprintf(a.stdout, "fleet %s: reshard cancelled; the parents already closed are placed again and resume from their ends (switch the producer back)\n", fc.name)
		return nil
	}
	for {
		s, err := op.Snapshot(ctx)
		if err != nil {
			return fc.explain(err, "read")
		}
		rp, running := s.Reshard()
		printReshard(a.stdout, s, rp, a.now())
		done := !running
		if !*wait || done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// printReshard prints rp, the reshard in progress in s, or the fleet's
// layout when none runs (rp's Layout zero).
func printReshard(w io.Writer, s shard.Snapshot, rp shard.ReshardProgress, now time.Time) {
	if rp.Layout.Shards == 0 {
		n, name := s.Config.Current()
		fmt.Fprintf(w, "no reshard in progress: %d shards named %s-… (%d reshards recorded)\n", n, name, len(s.Config.Layouts))
		return
	}
	l := rp.Layout
	fmt.Fprintf(w, "RESHARDING to %d shards named %s-… (lineage %s), started %s\n", l.Shards, l.Name, l.Lineage, markText(&l.Started, now))
	fmt.Fprintf(w, "  parents: %d closed, %d closing now%s, %d waiting their turn\n", len(rp.Closed), len(rp.Closing), sample(rp.Closing), len(rp.Open)-len(rp.Closing))
	fmt.Fprintf(w, "  children: %d open, %d waiting for a parent%s\n", len(rp.Opened)+len(rp.Openable), len(rp.Waiting), sample(rp.Waiting))
}

// sample is up to three of ids, for a progress line.
func sample(ids []shard.ID) string {
	if len(ids) == 0 {
		return ""
	}
	out := fmt.Sprintf(" (%s", ids[0])
	for _, id := range ids[1:min(3, len(ids))] {
		out += ", " + string(id)
	}
	if len(ids) > 3 {
		out += ", …"
	}
	return out + ")"
}

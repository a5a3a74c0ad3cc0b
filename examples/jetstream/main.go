// Command jetstream runs a stream processor on a real log, with real
// owners that fail and a real database, and proves its effects are exactly
// once although delivery is at least once, and that it reshards under load
// keeping each key's order.
//
// One JetStream stream holds the partitions (subjects orders.000 …); a
// producer publishes orders to them, one event to every partition a round:
// an event's key (an order id) picks its partition by hash, and each event
// is numbered in its key's own sequence. A shardlease fleet owns the
// partitions, one shard each: an owner reads its partition with an
// ordered consumer from the sequence stored as the shard's offset, and
// applies each batch to PostgreSQL inside FencedTx — the effect rows and
// the new offset in one transaction, refused if a newer owner has fenced
// the shard. The handlers keep state: per partition, windows of
// --window events aggregated (count and sum), each written in the
// transaction of the batch that closes it; a handler that starts cold
// rebuilds the open window from the last window row and the stream
// (--replay-cost an event), and a standby on another worker (--standbys per
// shard) keeps it warm, so that a killed owner's partitions resume without
// the rebuild.
//
// While it runs, two workers die (their sessions abandoned, as a kill -9
// would); then the producer switches from --partitions to --reshard-to
// partition subjects (64 → 128: orders.000 … orders.063, then orders.064 …
// orders.191), publishing a marker at the end of every old one, and the
// fleet reshards the same way (shard lineage "mod": a key hashed h moves
// from parent h mod 64 to child h mod 128). Each parent's owner applies
// its partition up to the marker and closes it there; each child starts
// once its parents closed. A worker whose handlers stalled short of their
// markers is killed during the reshard, so its parents are closed by
// their next owners. Then one worker is paused past its lease with a
// transaction open, and one joins. At the end it reads the stream and
// PostgreSQL back and prints, per partition, the events published and
// applied, duplicates and gaps (both must be 0) and whether the offset is
// at the last message (the marker, for an old partition); the windows
// against a recomputation from the stream (each written once, equal); per
// key, that every event was applied once and in the key's order across
// the switch, as PostgreSQL's own snapshots tell it (each transaction
// records which others had committed before it wrote); and the
// transactions of superseded owners that the fence refused. It exits
// non-zero on any breach.
//
//	go run ./examples/jetstream
//	go run ./examples/jetstream --nats nats://127.0.0.1:4222 --postgres postgres://… --consul 127.0.0.1:8500
//	go run ./examples/jetstream --etcd 127.0.0.1:2379
//
// Without --nats it runs nats-server in-process (loopback, a temporary store
// directory); without --postgres it starts a throwaway PostgreSQL from the
// installed binaries (`bash scripts/postgres.sh` installs them; a given one
// must be PostgreSQL 13 or later); without --consul or --etcd the fleet
// runs on the embedded coordinator. Everything it creates is removed at
// the end: the stream, the run's schema, the fleet's keys.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/shardlease/shardlease/examples/internal/engine"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(cli(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func cli(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := defaultOptions()
	fs := flag.NewFlagSet("jetstream", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.natsURL, "nats", "", "NATS server with JetStream to use (default: one in-process, on loopback)")
	fs.StringVar(&o.postgresDSN, "postgres", "", "PostgreSQL to use, a postgres:// URL (default: a throwaway cluster from the installed binaries)")
	fs.IntVar(&o.partitions, "partitions", o.partitions, "partitions of the stream until the switch, and shards of the fleet until the reshard")
	fs.IntVar(&o.reshardTo, "reshard-to", o.reshardTo, "partitions after the switch, and shards after the reshard (0: twice --partitions)")
	fs.IntVar(&o.workers, "workers", o.workers, "workers at the start (three die, one pauses, one joins)")
	fs.Int64Var(&o.events, "events", o.events, "rounds of events published, at least: one event to every partition of the current layout a round")
	fs.DurationVar(&o.pace, "pace", o.pace, "one round per pace")
	fs.IntVar(&o.keysPer, "keys", o.keysPer, "keys (order ids) per partition, at least, before and after the switch")
	fs.Int64Var(&o.window, "window", o.window, "events per aggregate window of each partition (the handlers' state)")
	fs.DurationVar(&o.replayCost, "replay-cost", o.replayCost, "work per event replayed when a handler rebuilds its state cold")
	fs.IntVar(&o.standbys, "standbys", o.standbys, "standbys for failover per shard (0: none, every move rebuilds)")
	var choice engine.Choice
	choice.Register(fs, "shardlease-examples/jetstream")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if err := choice.Parsed(fs); err != nil {
		fmt.Fprintln(stderr, "jetstream:", err)
		return 2
	}
	if choice.Shared() {
		o.useShared(&choice)
	}
	if err := o.validate(); err != nil {
		fmt.Fprintln(stderr, "jetstream:", err)
		return 2
	}
	res, err := run(ctx, o, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "jetstream:", err)
		return 1
	}
	if err := res.check(); err != nil {
		fmt.Fprintln(stderr, "jetstream:", err)
		return 1
	}
	return 0
}

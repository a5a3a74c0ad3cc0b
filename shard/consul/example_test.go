package consul_test

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	offconsul "github.com/shardlease/shardlease/offsets/consul"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/worker"
)

// A worker process of a fleet on Consul. The connection comes from the
// environment as for the consul CLI (CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN_FILE,
// CONSUL_CACERT, …), each overridable by a flag; the token needs the worker
// policy of docs/security.md. Offsets are kept in the same Consul, under the
// fleet's prefix. SIGTERM drains: handlers commit and return, every shard is
// released and the session destroyed, so other workers take over at once.
func ExampleNew() {
	cfg := consul.DefaultConfig()
	cfg.Prefix = "shardlease/orders"
	cfg.RegisterFlags(flag.CommandLine)
	flag.Parse()

	coord, err := consul.New(cfg) // sends nothing yet
	if err != nil {
		log.Fatal(err)
	}
	defer coord.Close()
	store, err := offconsul.New(offconsul.Config{Connection: cfg.Connection(), Prefix: cfg.Prefix})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	host, _ := os.Hostname()
	w, err := worker.New(worker.Config{
		ID:          host,
		Fleet:       shard.Config{Shards: 128},
		Coordinator: coord,
		Offsets:     store,
		Policy:      shard.DefaultPolicy, // 10 s TTL, renew every 2 s, 5 s pause budget
		Handler: worker.HandlerFunc(func(ctx context.Context, c *worker.Claim) error {
			// Consume c.Shard from c.Start.Offset; c.Commit(ctx, offset) as you go.
			<-ctx.Done()
			return nil
		}),
	})
	if err != nil {
		log.Fatal(err) // every bad field named at once
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := w.Run(ctx); err != nil {
		log.Fatal(err) // e.g. shard.ErrPermissionDenied: the token lacks a permission
	}
}

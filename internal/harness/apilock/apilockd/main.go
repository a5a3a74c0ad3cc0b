// Command apilockd runs one worker of the api.Lock baseline
// (internal/harness/apilock) as its own process, for shardbench's crash
// and stop rows: SIGKILL is a crash, SIGTERM a clean stop (every lock
// released, the session destroyed).
//
//	apilockd --consul ADDR --prefix P --id ID --shards N [--mode default|tuned]
//	         [--ttl D --renew D --lock-delay D] [--quick] [--history FILE]
//
// With --history it appends an internal/offsetlog "start" line when it
// starts a shard's work, right after acquiring its lock (token 0: the
// baseline has no fence), and an "end" line when the work stops, as
// `shardd worker --history` does for its handlers.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/consul/api"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/harness/apilock"
	"github.com/shardlease/shardlease/internal/logging"
	"github.com/shardlease/shardlease/internal/offsetlog"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "apilockd: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("apilockd", flag.ContinueOnError)
	conn := api.DefaultConfig()
	cfg := apilock.Config{Consul: conn}
	var shards int
	var mode, history string
	fs.StringVar(&conn.Address, "consul", conn.Address, "Consul agent HTTP address")
	fs.StringVar(&cfg.Prefix, "prefix", "", "the fleet's KV prefix")
	fs.StringVar(&cfg.ID, "id", "", "this worker's ID")
	fs.IntVar(&shards, "shards", 0, "number of shards (shard-000 …)")
	fs.StringVar(&mode, "mode", string(apilock.Default), "default or tuned")
	fs.DurationVar(&cfg.TTL, "ttl", 0, "tuned: the session's check TTL")
	fs.DurationVar(&cfg.RenewEvery, "renew", 0, "tuned: how often the check is passed")
	fs.DurationVar(&cfg.LockDelay, "lock-delay", 0, "tuned: the session's lock-delay")
	fs.BoolVar(&cfg.Quick, "quick", false, "default: session TTL 10s and lock-delay 1ms (smoke runs)")
	fs.StringVar(&history, "history", "", "append offsetlog start and end lines of every shard's work to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Mode, cfg.Shards = apilock.Mode(mode), apilock.ShardNames(shards)
	if shards < 1 {
		return fmt.Errorf("--shards %d: want at least 1", shards)
	}
	if history != "" {
		out, err := offsetlog.OpenFile(history)
		if err != nil {
			return err
		}
		defer out.Close()
		rec := offsetlog.New(offmem.New(), out, cfg.ID)
		cfg.OnStart = func(s string) func() {
			r, err := rec.StartRun(shard.ID(s), 0, time.Now())
			if err != nil {
				fmt.Fprintf(os.Stderr, "apilockd: %v\n", err)
			}
			return r.End
		}
	}
	log, err := logging.JSON("info", os.Stderr)
	if err != nil {
		return err
	}
	return apilock.Run(ctx, cfg, log.With(zap.Int("pid", os.Getpid())))
}

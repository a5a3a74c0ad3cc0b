package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/shardlease/shardlease/internal/dashboard"
	"github.com/shardlease/shardlease/internal/logging"
)

func (a *app) dashboard(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl dashboard", flag.ContinueOnError)
	conn := a.connFlags(fs)
	addr := fs.String("http", "127.0.0.1:8080", "address to serve the dashboard on")
	level := fs.String("log-level", "warn", "log level: debug, info, warn, error")
	budget := budgetFlag(fs)
	tolerance := toleranceFlag(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl dashboard -prefix P [-http ADDR] [flags]

Serves the fleet's live dashboard: the ownership grid (one cell per shard,
coloured by owner, token on hover), the workers, the imbalance and the
recent moves with their reasons, updated by server-sent events as Consul
changes; the same data as JSON at /api/v1/fleet. Read-only. Ctrl-C stops.

`)
		fs.PrintDefaults()
	}
	if _, err := a.parseFlags(fs, args, 0, ""); err != nil {
		return err
	}
	log, err := logging.Console(*level, a.stderr)
	if err != nil {
		return usageError{err.Error()}
	}
	defer log.Sync()
	fc, err := a.open(conn)
	if err != nil {
		return err
	}
	defer fc.close()
	// Fail now, in one line, on what would otherwise be a page full of errors.
	if _, err := fc.snapshot(ctx); err != nil {
		return err
	}
	o := dashboard.Options{Name: fc.name, Coordinator: fc.coord, Logger: log, MaxMovesInFlight: *budget, Tolerance: *tolerance}
	if fc.offsets != nil {
		// One consistent read per shard: every 5 s is plenty for people.
		o.Offsets, o.Refresh = fc.offsets, 5*time.Second
	}
	srv, err := dashboard.New(o)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return usagef("-http %q: %v", *addr, err)
	}
	fmt.Fprintf(a.stdout, "dashboard of %s: http://%s/  (JSON: /api/v1/fleet) — Ctrl-C to stop\n", fc.name, ln.Addr())
	return srv.Serve(ctx, ln)
}

// Command shardctl shows and steers the shard ownership of a shardlease
// fleet on Consul.
//
//	shardctl status     every shard's owner, token, since and why; every worker; the imbalance
//	shardctl watch      a live stream of ownership changes with their reasons
//	shardctl history [S]  the recorded ownership changes, of the fleet or of shard S
//	shardctl explain S T  which worker held shard S at token T, and whether the store refuses T now
//	shardctl drain W    ask worker W to hand off all its shards; show progress until done
//	shardctl undrain W  withdraw a drain
//	shardctl cordon W   worker W keeps what it has and is given nothing new
//	shardctl uncordon W lift a cordon
//	shardctl freeze     no rebalancing moves in the fleet, only failover
//	shardctl unfreeze   lift the freeze
//	shardctl release S  force shard S free (after a confirmation)
//	shardctl delete-shard S  delete a free shard key left by a hand edit
//	shardctl balance    show or change the fleet's balance policy (moves in flight, load band, ...)
//	shardctl policy     check a lease policy against 2 × renew + pause ≤ ttl
//	shardctl dashboard  serve the live dashboard of the fleet
//
// The actions themselves (drain, undrain, cordon, uncordon, freeze,
// unfreeze, release, delete-shard) and their rules are package admin's;
// this command parses flags, asks, and prints.
//
// The connection is the consul CLI's: CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN,
// CONSUL_CACERT and the other CONSUL_* variables, each overridden by a flag;
// the fleet is named by -prefix (or SHARDLEASE_PREFIX). Errors are one line
// on stderr with a non-zero exit: 1 when the command failed, 2 for a bad
// command line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/shardlease/shardlease/internal/cli"
)

// Exit codes.
const (
	exitOK        = 0
	exitFailed    = 1 // the command ran and failed (or a check failed)
	exitBadInvoke = 2 // bad command line
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, now: time.Now}
	os.Exit(a.run(ctx, os.Args[1:]))
}

// app is one invocation: its streams, environment and clock, and how it
// reaches a fleet (tests replace connect with an embedded coordinator).
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	connect        func(connFlags) (*fleetConn, error)
}

type command struct {
	name, summary string
	run           func(a *app, ctx context.Context, args []string) error
}

var commands = []command{
	{"status", "every shard's owner, token, since and why it last moved; every worker; the imbalance", (*app).status},
	{"watch", "a live stream of ownership changes with their reasons", (*app).watch},
	{"history", "the ownership changes the assignors recorded (the last 1000), of the fleet or of one shard", (*app).history},
	{"explain", "which worker held a shard at a fencing token, when, and whether the offsets store refuses that token now", (*app).explain},
	{"drain", "ask a worker to hand off all its shards gracefully, and show progress until done", (*app).drain},
	{"undrain", "withdraw a drain: the worker takes a share of shards again", (*app).undrain},
	{"cordon", "a worker keeps the shards it has and is given nothing new (before a drain, or a sick machine)", (*app).cordon},
	{"uncordon", "lift a cordon: the worker is given its share again", (*app).uncordon},
	{"freeze", "no rebalancing moves in the fleet, only failover of crashed workers' shards (maintenance, incidents)", (*app).freeze},
	{"unfreeze", "lift the freeze: rebalancing resumes within the move budget", (*app).unfreeze},
	{"release", "force a shard free now (asks first); fencing keeps the old owner's late writes out", (*app).release},
	{"delete-shard", "delete a shard key a hand edit left (free, or outside the fleet's config); never a held one", (*app).deleteShard},
	{"reshard", "change the shard count while the fleet runs: old shards close at their end, new ones start after their parents (or show its progress, or cancel it)", (*app).reshard},
	{"recover", "after the coordinator lost its history (rebuilt, restored): raise the fleet's generation above the store's floors (asks first)", (*app).recoverFleet},
	{"balance", "show or change the fleet's balance policy, followed live by the assignor (moves in flight, counts or load, band)", (*app).balance},
	{"rules", "list, add or remove placement rules: pin shards to, prefer or avoid workers by labels and zone", (*app).rules},
	{"policy", "check a lease policy against the rule 2 × renew + pause ≤ ttl", (*app).policy},
	{"dashboard", "serve the fleet's live dashboard (ownership grid, workers, moves) and its JSON API", (*app).dashboard},
}

func (a *app) run(ctx context.Context, args []string) int {
	if a.connect == nil {
		a.connect = a.connectCoordinator
	}
	if len(args) == 0 {
		a.usage(a.stderr)
		return exitBadInvoke
	}
	if h := args[0]; h == "-h" || h == "-help" || h == "--help" || h == "help" {
		a.usage(a.stdout)
		return exitOK
	}
	if v := args[0]; v == "version" || v == "-version" || v == "--version" {
		cli.PrintVersion(a.stdout, "shardctl")
		return exitOK
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(a, ctx, args[1:])
		var u usageError
		switch {
		case err == nil:
			return exitOK
		case errors.Is(err, flag.ErrHelp):
			return exitOK
		case errors.As(err, &u):
			if u.msg != "" {
				fmt.Fprintf(a.stderr, "shardctl %s: %s\n", c.name, u.msg)
			}
			return exitBadInvoke
		case errors.Is(err, errSilent):
			return exitFailed
		default:
			fmt.Fprintf(a.stderr, "shardctl %s: %s\n", c.name, oneLine(err))
			return exitFailed
		}
	}
	fmt.Fprintf(a.stderr, "shardctl: unknown command %q (run 'shardctl help')\n", args[0])
	return exitBadInvoke
}

func (a *app) usage(w io.Writer) {
	fmt.Fprint(w, "usage: shardctl COMMAND [flags]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-10s %s\n", "version", "print the release, the commit and the protocol this build speaks")
	fmt.Fprint(w, `
Every command but policy and version talks to the fleet's coordinator: -prefix
P (or SHARDLEASE_PREFIX) names the fleet; Consul's connection comes from
CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN, CONSUL_CACERT, ... as for the consul CLI;
with --etcd ENDPOINTS the fleet is on etcd, its TLS and user from
ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY, ETCDCTL_USER, ... as for etcdctl;
each is overridden by its flag. Run 'shardctl COMMAND -h' for a command's flags.
`)
}

// usageError is a bad command line: exit 2. An empty msg means the flag
// package already said what was wrong.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// errSilent: the command already printed why it failed.
var errSilent = errors.New("failed")

// parseFlags parses args into fs, with the flag package's messages on
// stderr, and returns the positional arguments, which must number exactly
// nargs.
func (a *app) parseFlags(fs *flag.FlagSet, args []string, nargs int, what string) ([]string, error) {
	return a.parseFlagsUpTo(fs, args, nargs, nargs, what)
}

// parseFlagsUpTo is parseFlags for a command whose last positional
// arguments are optional: between least and most of them.
func (a *app) parseFlagsUpTo(fs *flag.FlagSet, args []string, least, most int, what string) ([]string, error) {
	fs.SetOutput(a.stderr)
	// Let flags follow the positional argument too: shardctl drain w03 -yes.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{}
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch {
	case len(pos) < least:
		return nil, usagef("missing %s", what)
	case len(pos) > most && most == 0:
		return nil, usagef("unexpected argument %q", pos[0])
	case len(pos) > most:
		return nil, usagef("unexpected argument %q after %s %q", pos[most], what, strings.Join(pos[:most], " "))
	}
	return pos, nil
}

// openFleet parses a fleet command's flags as parseFlags does and connects
// to the fleet; the caller closes the connection.
func (a *app) openFleet(fs *flag.FlagSet, conn *connFlags, args []string, nargs int, what string) ([]string, *fleetConn, error) {
	return a.openFleetUpTo(fs, conn, args, nargs, nargs, what)
}

// openFleetUpTo is openFleet for a command with optional positional
// arguments (parseFlagsUpTo).
func (a *app) openFleetUpTo(fs *flag.FlagSet, conn *connFlags, args []string, least, most int, what string) ([]string, *fleetConn, error) {
	pos, err := a.parseFlagsUpTo(fs, args, least, most, what)
	if err != nil {
		return nil, nil, err
	}
	fc, err := a.open(conn)
	if err != nil {
		return nil, nil, err
	}
	return pos, fc, nil
}

// oneLine makes an error fit one line of a terminal.
func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	const max = 600
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

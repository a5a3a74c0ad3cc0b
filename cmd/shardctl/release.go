package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/shard"
)

// releaseReason is written into the shard key by shardctl release; the
// next owner's acquisition reason quotes it.
const releaseReason = "forced free by an operator (shardctl release)"

func (a *app) release(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl release", flag.ContinueOnError)
	conn := a.connFlags(fs)
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for the next owner to show it (0: do not wait)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl release -prefix P [flags] SHARD

Forces SHARD free now, whoever holds it, after a confirmation. SHARD is a
shard ID (stream/shard-007) or just its number (7). The owner is not asked
first: it finds out on its next watch and stops its handler. Fencing is what
keeps the data safe: the next owner acquires with a higher token, and the
offset store refuses every write still sent with the old one.

`)
		fs.PrintDefaults()
	}
	pos, err := a.parseFlags(fs, args, 1, "SHARD")
	if err != nil {
		return err
	}
	fc, err := a.open(conn)
	if err != nil {
		return err
	}
	defer fc.close()

	f, s, err := a.view(ctx, fc)
	if err != nil {
		return err
	}
	id, err := resolveShard(f, pos[0])
	if err != nil {
		return err
	}
	sh, _ := f.Shard(id)
	now := a.now()
	if sh.State == fleetview.ShardFree {
		fmt.Fprintf(a.stdout, "%s is already free (%s); nothing to release\n", id, sh.Why)
		return nil
	}
	var st shard.ShardState
	for _, k := range s.Shards {
		if k.Shard == id {
			st = k
		}
	}
	owner := sh.Owner
	if sh.State == fleetview.ShardOrphaned {
		owner = fmt.Sprintf("session %s (worker %s, whose member key is gone)", short(string(sh.Session)), orDash(sh.Owner))
	}
	fmt.Fprintf(a.stdout, "%s is owned by %s with token %d, since %s.\n\n", id, owner, sh.Token, stamp(sh.Since, now))
	next := "the worker the assignor gives it to"
	if sh.Assigned != "" && sh.Assigned != sh.Owner {
		next = sh.Assigned // a hand-off in flight: the assignor already chose
	}
	fmt.Fprintf(a.stdout, `Releasing it frees the lock at once, without asking %[1]s: %[2]s takes it
with a higher token. %[1]s learns of it on its next watch and stops its handler;
until then it may still send writes, but they carry token %[3]d, and the offset
store refuses them as soon as the next owner fences with its higher token.
Fencing protects the data: what is lost is the work %[1]s had not committed,
which the next owner redoes from the last committed offset.

`, sh.Owner, next, sh.Token)

	if !*yes {
		fmt.Fprintf(a.stdout, "Release %s from %s? [y/N] ", id, sh.Owner)
		answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
		answer = strings.ToLower(strings.TrimSpace(answer))
		if answer != "y" && answer != "yes" {
			fmt.Fprintln(a.stdout)
			return fmt.Errorf("%s not released: not confirmed (answer y, or pass -yes)", id)
		}
	}
	if err := fc.coord.Release(ctx, st.Session, []shard.ID{id}, releaseReason); err != nil {
		if errors.Is(err, shard.ErrSessionInvalid) {
			return fmt.Errorf("%s: its owner's session ended meanwhile, so it is free already", id)
		}
		return fc.explain(err, "write")
	}
	fmt.Fprintf(a.stdout, "released %s (was %s, token %d)\n", id, sh.Owner, sh.Token)
	if *wait <= 0 {
		return nil
	}
	return a.awaitOwner(ctx, fc, id, sh.Token, *wait)
}

// awaitOwner shows the shard's next owner and its (higher) token.
func (a *app) awaitOwner(ctx context.Context, fc *fleetConn, id shard.ID, old shard.Token, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	err := fleetview.Follow(ctx, fc.coord, func(s shard.Snapshot) error {
		f := fleetview.Build(fleetview.Input{Name: fc.name, Snapshot: s, Now: a.now()})
		if sh, ok := f.Shard(id); ok && sh.State == fleetview.ShardOwned && sh.Token > old {
			fmt.Fprintf(a.stdout, "%s → %s with token %d (> %d: writes with the old token are refused): %s\n", id, sh.Owner, sh.Token, old, sh.Reason)
			return fleetview.ErrStop
		}
		return nil
	}, func(err error) bool { return !errors.Is(err, shard.ErrPermissionDenied) })
	if err != nil {
		return fc.explain(err, "read")
	}
	if ctx.Err() != nil {
		fmt.Fprintf(a.stdout, "no worker has taken %s within %v; it stays free until one does (on its next rebalance round)\n", id, wait)
	}
	return nil
}

// resolveShard accepts a shard ID of the fleet or its number.
func resolveShard(f fleetview.Fleet, arg string) (shard.ID, error) {
	if _, ok := f.Shard(shard.ID(arg)); ok {
		return shard.ID(arg), nil
	}
	n := len(f.Shards)
	if i, err := strconv.Atoi(arg); err == nil && i >= 0 && i < n {
		return f.Shards[i].ID, nil
	}
	span := ""
	if n > 0 {
		span = fmt.Sprintf(": %s … %s, or a number 0..%d", f.Shards[0].ID, f.Shards[n-1].ID, n-1)
	}
	return "", fmt.Errorf("no shard %q in fleet %s (it has %d shards%s)", arg, f.Name, n, span)
}

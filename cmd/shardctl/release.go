package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/admin"
)

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
offset store refuses every write still sent with the old one. A shard that
changed hands while you confirmed is left with its new owner.

`)
		fs.PrintDefaults()
	}
	pos, fc, err := a.openFleet(fs, conn, args, 1, "SHARD")
	if err != nil {
		return err
	}
	defer fc.close()

	op := fc.operator(a)
	sh, err := op.Shard(ctx, pos[0])
	if err != nil {
		return fc.explain(err, "read")
	}
	id, now := sh.ID, a.now()
	if sh.State == admin.ShardFree {
		fmt.Fprintf(a.stdout, "%s is already free (%s); nothing to release\n", id, sh.Why)
		return nil
	}
	owner := sh.Owner
	if sh.State == admin.ShardOrphaned {
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

	if !*yes && !a.confirm(fmt.Sprintf("Release %s from %s?", id, sh.Owner)) {
		return fmt.Errorf("%s not released: not confirmed (answer y, or pass -yes)", id)
	}
	if err := op.Release(ctx, sh); err != nil {
		return fc.explain(err, "read")
	}
	fmt.Fprintf(a.stdout, "released %s (was %s, token %d)\n", id, sh.Owner, sh.Token)
	if *wait <= 0 {
		return nil
	}
	return a.awaitOwner(ctx, fc, sh, *wait)
}

// confirm asks a yes/no question on stdout and reads the answer; only y or
// yes (any case) confirms.
func (a *app) confirm(question string) bool {
	fmt.Fprintf(a.stdout, "%s [y/N] ", question)
	answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
	answer = strings.ToLower(strings.TrimSpace(answer))
	if answer != "y" && answer != "yes" {
		fmt.Fprintln(a.stdout)
		return false
	}
	return true
}

// awaitOwner shows the released shard's next owner and its (higher) token.
func (a *app) awaitOwner(ctx context.Context, fc *fleetConn, old admin.ShardInfo, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	sh, err := fc.operator(a).WaitNextOwner(ctx, old.ID, old.Token, nil)
	switch {
	case errors.Is(err, admin.ErrNotTaken):
		fmt.Fprintf(a.stdout, "no worker has taken %s within %v; it stays free until one does (on its next rebalance round)\n", old.ID, wait)
		return nil
	case err != nil:
		return fc.explain(err, "read")
	}
	fmt.Fprintf(a.stdout, "%s → %s with token %d (> %d: writes with the old token are refused): %s\n", sh.ID, sh.Owner, sh.Token, old.Token, sh.Reason)
	return nil
}

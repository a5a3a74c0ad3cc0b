package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/shard"
)

func (a *app) drain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl drain", flag.ContinueOnError)
	conn := a.connFlags(fs)
	noWait := fs.Bool("no-wait", false, "set the drain and return; do not follow its progress")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up waiting after this long (the drain stays set); 0 waits forever")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl drain -prefix P [flags] WORKER

Asks WORKER to hand off all of its shards gracefully: sets Draining on its
member key, so the assignor gives it no shards and the worker releases its
shards a few per rebalance round, each to its designated new owner, after
its handler has committed. Shows progress until the worker owns nothing.
The worker stays a live member (stop its process when it is done) and keeps
the drain if it rejoins; 'shardctl undrain WORKER' withdraws it.

`)
		fs.PrintDefaults()
	}
	pos, err := a.parseFlags(fs, args, 1, "WORKER")
	if err != nil {
		return err
	}
	fc, err := a.open(conn)
	if err != nil {
		return err
	}
	defer fc.close()

	id := pos[0]
	f, _, err := a.setDraining(ctx, fc, id, true)
	if err != nil {
		return err
	}
	w, _ := f.Worker(id)
	if *noWait {
		fmt.Fprintf(a.stdout, "drain of %s set: it owns %d shards and hands them off as the fleet's move budget allows ('shardctl status' shows progress)\n", id, w.Shards)
		return nil
	}
	fmt.Fprintf(a.stdout, "draining %s (%d shards, session %s): the assignor gives it no shards; it hands them off as the fleet's move budget allows\n",
		id, w.Shards, short(string(w.Session)))
	return a.followDrain(ctx, fc, id, f, *timeout)
}

func (a *app) undrain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl undrain", flag.ContinueOnError)
	conn := a.connFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: shardctl undrain -prefix P [flags] WORKER\n\nWithdraws a drain: the worker takes its share of shards again within a few rounds.\n\n")
		fs.PrintDefaults()
	}
	pos, err := a.parseFlags(fs, args, 1, "WORKER")
	if err != nil {
		return err
	}
	fc, err := a.open(conn)
	if err != nil {
		return err
	}
	defer fc.close()
	f, changed, err := a.setDraining(ctx, fc, pos[0], false)
	if err != nil {
		return err
	}
	w, _ := f.Worker(pos[0])
	if !changed {
		fmt.Fprintf(a.stdout, "%s is not draining (it owns %d shards); nothing to do\n", w.ID, w.Shards)
		return nil
	}
	fmt.Fprintf(a.stdout, "drain of %s withdrawn: it takes a share of shards again within a few rebalance rounds\n", w.ID)
	return nil
}

// setDraining sets or clears Draining on a live worker's member key, by
// rewriting the key under the worker's own session (the coordinator's Join
// updates the value of a key its session holds). It returns the fleet as it
// was before, and whether anything changed.
func (a *app) setDraining(ctx context.Context, fc *fleetConn, id string, on bool) (fleetview.Fleet, bool, error) {
	for attempt := 0; ; attempt++ {
		f, s, err := a.view(ctx, fc)
		if err != nil {
			return f, false, err
		}
		w, ok := f.Worker(id)
		if !ok {
			return f, false, fmt.Errorf("no worker %q in fleet %s (workers: %s)", id, fc.name, list(f.WorkerIDs()))
		}
		if !w.Live() {
			return f, false, fmt.Errorf("worker %q is dead (its member key has no session): it owns nothing and its shards were already taken over; there is nothing to drain", id)
		}
		if w.Draining == on {
			return f, false, nil
		}
		if on && f.Summary.Live-f.Summary.Draining <= 1 {
			return f, false, fmt.Errorf("%s is the only live worker not draining: its shards would have nowhere to go (the assignor ignores drains when every worker drains); start another worker first", id)
		}
		ms, _ := memberState(s, id)
		m := ms.Member
		m.Draining = on
		err = fc.coord.Join(ctx, ms.Session, m)
		switch {
		case err == nil:
			return f, true, nil
		case errors.Is(err, shard.ErrSessionInvalid) && attempt < 2:
			continue // the worker rejoined in between: read again
		case errors.Is(err, shard.ErrSessionInvalid), errors.Is(err, shard.ErrMemberExists):
			return f, false, fmt.Errorf("worker %q keeps changing sessions (restarting?); try again: %w", id, err)
		default:
			return f, false, fc.explain(err, "write")
		}
	}
}

func memberState(s shard.Snapshot, id string) (shard.MemberState, bool) {
	for _, m := range s.Members {
		if m.ID == id {
			return m, true
		}
	}
	return shard.MemberState{}, false
}

// followDrain prints progress whenever it changes, until the worker owns
// nothing and every shard it owned at the start has a new live owner.
func (a *app) followDrain(ctx context.Context, fc *fleetConn, id string, f0 fleetview.Fleet, timeout time.Duration) error {
	start := a.now()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var mine []shard.ID
	for _, s := range f0.Shards {
		if s.State == fleetview.ShardOwned && s.Owner == id {
			mine = append(mine, s.ID)
		}
	}
	total := len(mine)
	left, moved := total, 0
	var lastErr string
	done := errors.New("done")
	err := fleetview.Follow(ctx, fc.coord, func(s shard.Snapshot) error {
		lastErr = ""
		f := fleetview.Build(fleetview.Input{Name: fc.name, Snapshot: s, Now: a.now()})
		cur, ok := f.Worker(id)
		if !ok || !cur.Live() {
			fmt.Fprintf(a.stdout, "%s left the fleet (its session ended) before the drain finished; the others take over what it held\n", id)
			return done
		}
		if !cur.Draining {
			return fmt.Errorf("the drain of %s was withdrawn (someone ran 'shardctl undrain %s')", id, id)
		}
		n := 0
		for _, sid := range mine {
			if sh, _ := f.Shard(sid); sh.State == fleetview.ShardOwned && sh.Owner != id {
				n++
			}
		}
		if cur.Shards != left || n != moved {
			left, moved = cur.Shards, n
			fmt.Fprintf(a.stdout, "  %s: %3d shards left  %s  %d/%d with their new owners (%s)\n", id, left, bar(moved, total), moved, total, ago(a.now().Sub(start)))
		}
		if left == 0 && moved == total {
			return done
		}
		return nil
	}, func(err error) bool {
		if errors.Is(err, shard.ErrPermissionDenied) {
			return false
		}
		if msg := oneLine(fc.explain(err, "read")); msg != lastErr {
			fmt.Fprintf(a.stderr, "shardctl drain: %s; retrying\n", msg)
			lastErr = msg
		}
		return true
	})
	switch {
	case errors.Is(err, done):
		if left == 0 && moved == total {
			fmt.Fprintf(a.stdout, "%s drained in %s: it owns no shards and all %d have new owners. It is still a live member: stop its process, or run 'shardctl undrain %s'\n",
				id, ago(a.now().Sub(start)), total, id)
		}
		return nil
	case err != nil:
		return fc.explain(err, "read")
	case errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		return fmt.Errorf("%s still owns %d shards after %v (%d/%d with new owners); the drain stays set: is the worker running a version that honours drains?", id, left, timeout, moved, total)
	default:
		return fmt.Errorf("stopped waiting: %s still owns %d shards (%d/%d with new owners); the drain stays set ('shardctl status' shows progress)", id, left, moved, total)
	}
}

// bar is a progress bar of n out of total.
func bar(n, total int) string {
	const width = 20
	if total <= 0 {
		return "[" + strings.Repeat("#", width) + "]"
	}
	k := n * width / total
	return "[" + strings.Repeat("#", k) + strings.Repeat(".", width-k) + "]"
}

// list shows up to 20 names.
func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) > 20 {
		return strings.Join(names[:20], ", ") + fmt.Sprintf(", … (%d in all)", len(names))
	}
	return strings.Join(names, ", ")
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/internal/history"
	"github.com/shardlease/shardlease/shard"
)

// readHistory reads and decodes the fleet's P/history.
func (fc *fleetConn) readHistory(ctx context.Context) (history.Log, error) {
	value, _, err := fc.coord.History().Read(ctx)
	if err != nil {
		return history.Log{}, fc.explain(err, "read")
	}
	l, err := history.Decode(value)
	if err != nil {
		return history.Log{}, fmt.Errorf("%w; read it with 'consul kv get %s/history'", err, fc.name)
	}
	return l, nil
}

func (a *app) history(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl history", flag.ContinueOnError)
	conn := a.connFlags(fs)
	n := fs.Int("n", 50, "show the last n changes (0: all the log keeps)")
	asJSON := fs.Bool("json", false, "print one JSON object per change (history.Change), one per line")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl history -prefix P [SHARD] [-n N] [-json] [flags]

Prints the changes of owner that the fleet's assignors recorded in the
fleet's keys (P/history), oldest first: who took each shard, with which
fencing token, when (the worker's clock) and why, and how each tenure ended
(released and why, expired: the session ended without releasing it). The log
keeps the last 1000 changes; it outlives every worker and assignor. SHARD (an
ID or its number) shows that shard's changes only. A shard taken and lost
again between two of the assignor's listings (a few hundred milliseconds; more
across an assignor change) leaves no trace, and a tenure that ended unseen
shows as "superseded". 'shardctl explain SHARD TOKEN' tells one token's story.

`)
		fs.PrintDefaults()
	}
	pos, fc, err := a.openFleetUpTo(fs, conn, args, 0, 1, "shard")
	if err != nil {
		return err
	}
	defer fc.close()
	if *n < 0 {
		return usagef("-n %d: want a number of changes, 0 for all", *n)
	}
	s, err := fc.snapshot(ctx)
	if err != nil {
		return err
	}
	l, err := fc.readHistory(ctx)
	if err != nil {
		return err
	}
	changes := l.Changes
	if len(pos) == 1 {
		id, err := admin.ResolveShard(fc.name, *s.Config, pos[0])
		if err != nil {
			return err
		}
		changes = l.Of(id)
	}
	if *n > 0 && len(changes) > *n {
		changes = changes[len(changes)-*n:]
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		for _, c := range changes {
			if err := enc.Encode(c); err != nil {
				return err
			}
		}
		return nil
	}
	if len(changes) == 0 {
		fmt.Fprintf(a.stdout, "no ownership changes recorded in %s/history%s\n", fc.name, historyGap(s))
		return nil
	}
	for _, c := range changes {
		fmt.Fprintf(a.stdout, "%s  %s\n", c.When().Format("2006-01-02 15:04:05.000"), c)
	}
	return nil
}

// historyGap says why a fleet may have no history yet.
func historyGap(s shard.Snapshot) string {
	if !s.AllSpeak(shard.StepHistory) {
		return fmt.Sprintf(" (live workers of an older release do not speak the %q step: the assignor records nothing until they are upgraded)", shard.StepHistory)
	}
	return ""
}

func (a *app) explain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl explain", flag.ContinueOnError)
	conn := a.connFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl explain -prefix P SHARD TOKEN [TIME] [-offsets STORE] [flags]

Tells the story of one fencing token of one shard, for "two workers wrote
the same object": which worker held the shard with TOKEN, when its lease
began (its clock) and when the assignor saw it end, and how; the tenures
before and after it; who holds the shard now; with TIME (RFC 3339, e.g.
2026-12-05T10:00:00Z), whether that tenure was in force then; and with
-offsets, the store's floor for the shard and whether it refuses a write
with TOKEN now. The story comes from the fleet's ownership history
(shardctl history); the lock and the store's floor are the authorities.

`)
		fs.PrintDefaults()
	}
	pos, fc, err := a.openFleetUpTo(fs, conn, args, 2, 3, "shard and token")
	if err != nil {
		return err
	}
	defer fc.close()
	token, err := strconv.ParseUint(pos[1], 10, 64)
	if err != nil || token == 0 {
		return usagef("token %q: want the positive number a claim carries (shardctl status shows each owner's)", pos[1])
	}
	var at time.Time
	if len(pos) == 3 {
		if at, err = time.Parse(time.RFC3339Nano, pos[2]); err != nil {
			return usagef("time %q: want RFC 3339, e.g. 2026-12-05T10:00:00Z", pos[2])
		}
	}
	s, err := fc.snapshot(ctx)
	if err != nil {
		return err
	}
	id, err := admin.ResolveShard(fc.name, *s.Config, pos[0])
	if err != nil {
		return err
	}
	l, err := fc.readHistory(ctx)
	if err != nil {
		return err
	}
	tok := shard.Token(token)
	e := l.Explain(id, tok)
	fmt.Fprintf(a.stdout, "%s at token %d:\n", id, tok)
	switch {
	case e.Tenure.Began != nil:
		fmt.Fprintf(a.stdout, "  held by %s\n", tenureLine(e.Tenure))
	case e.Tenure.Ended != nil:
		fmt.Fprintf(a.stdout, "  held by %s (its acquisition is older than the log)\n", tenureLine(e.Tenure))
	case e.Window:
		fmt.Fprintf(a.stdout, "  not in the log: older than every change it keeps (the last %d)%s\n", history.Keep, historyGap(s))
	default:
		fmt.Fprintf(a.stdout, "  no tenure at this token in the log: either a worker held it for less than one of the assignor's listings, or it was never this shard's token\n")
	}
	if e.Before != nil {
		fmt.Fprintf(a.stdout, "  before it: %s\n", tenureLine(*e.Before))
	}
	if e.After != nil {
		fmt.Fprintf(a.stdout, "  after it:  %s\n", tenureLine(*e.After))
	}
	if !at.IsZero() && (e.Tenure.Began != nil || e.Tenure.Ended != nil) {
		fmt.Fprintf(a.stdout, "  at %s: %s\n", at.Format(time.RFC3339Nano), verdictText(e.Tenure.At(at)))
	}
	fmt.Fprintf(a.stdout, "  now: %s\n", lockNow(s, id, tok))
	if fc.offsets != nil {
		cp, err := fc.offsets.Load(ctx, id)
		if err != nil {
			return fmt.Errorf("reading %s's checkpoint from the offsets store: %w", id, err)
		}
		fmt.Fprintf(a.stdout, "  offsets store: %s\n", floorVerdict(cp.Floor, tok))
	}
	return nil
}

// tenureLine is one tenure: who, at which token, from when to when, and
// how it ended.
func tenureLine(t history.Tenure) string {
	line := fmt.Sprintf("%s (token %d)", t.Worker, t.Token)
	if t.Began != nil {
		line += fmt.Sprintf(", from %s (%s)", t.Began.When().Format("2006-01-02 15:04:05.000"), t.Began.Reason)
	}
	if t.Ended == nil {
		return line + ", no end recorded"
	}
	ended := "until " + t.Ended.At.Format("15:04:05.000") + " or before"
	if !t.Ended.Seen.IsZero() {
		ended = fmt.Sprintf("ended between %s (last seen held) and %s", t.Ended.Seen.Format("15:04:05.000"), t.Ended.At.Format("15:04:05.000"))
	}
	if t.Ended.Kind == history.Acquired {
		return line + fmt.Sprintf(", %s: %s took it with token %d", ended, t.Ended.Worker, t.Ended.Token)
	}
	return line + fmt.Sprintf(", %s: %s (%s)", ended, t.Ended.Kind, t.Ended.Reason)
}

// verdictText says what a log knows of a tenure at one moment.
func verdictText(v history.Verdict) string {
	switch v {
	case history.InForce:
		return "this tenure was in force"
	case history.NotInForce:
		return "this tenure was NOT in force"
	}
	return "the log cannot tell whether this tenure was in force (its start is not recorded, or the moment falls between the listing that last showed it held and the one that showed it ended)"
}

// lockNow says who holds the shard's lock now, against token.
func lockNow(s shard.Snapshot, id shard.ID, token shard.Token) string {
	for _, st := range s.Shards {
		if st.Shard != id || !st.Held() {
			continue
		}
		who := history.HolderOf(s, st)
		switch {
		case st.Token == token:
			return fmt.Sprintf("%s holds the shard at this token: it is the current owner", who)
		case st.Token > token:
			return fmt.Sprintf("%s holds the shard at token %d, above this one: a write with token %d is a stale owner's", who, st.Token, token)
		default:
			return fmt.Sprintf("%s holds the shard at token %d, BELOW this one: token %d was never granted after it (a forged or foreign token, or a coordinator rebuilt without 'shardctl recover')", who, st.Token, token)
		}
	}
	return "the shard is free"
}

// floorVerdict says whether a store with floor refuses a write at token.
func floorVerdict(floor, token shard.Token) string {
	switch {
	case floor > token:
		return fmt.Sprintf("floor %d: a write with token %d is REFUSED now", floor, token)
	case floor == token:
		return fmt.Sprintf("floor %d: a write with token %d is accepted (the latest owner to fence)", floor, token)
	default:
		return fmt.Sprintf("floor %d: a write with token %d is accepted and would raise the floor (no later owner has fenced yet)", floor, token)
	}
}

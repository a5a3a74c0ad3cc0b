package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/shard"
)

func (a *app) status(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shardctl status", flag.ContinueOnError)
	conn := a.connFlags(fs)
	asJSON := fs.Bool("json", false, "print the fleet as one JSON object (the dashboard's /api/v1/fleet)")
	noShards := fs.Bool("no-shards", false, "leave out the table of shards")
	moves := fs.Int("moves", 10, "how many of the latest acquisitions to list")
	budget := budgetFlag(fs)
	tolerance := toleranceFlag(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: shardctl status -prefix P [-json] [flags]

Shows every shard (owner, the worker its assignment key is in, fencing token,
owned since, why it last moved, and with -offsets its committed offset and
fencing floor),
every worker (state, shards owned, shards its assignment key gives it, marked
"stuck" while the assignor judges it so, version, session; "cordoned" with
who set it and when, "returning" while its shards are reserved for its
restart), which worker is the assignor and its epoch, whether the fleet is
frozen (who, when, why), the imbalance, the moves pending (hand-offs in
flight and free shards assigned but not yet taken, as the assignment keys
say), the move queue (hand-offs in flight against the budget when known,
and those waiting), and the latest acquisitions recorded in the shard keys.
When the workers carry loads (load balancing), each worker's load and its
load per unit of capacity over the fleet's mean (1.00: exactly its share;
"high" or "low" outside the tolerance band), each shard's load, and the
fleet's spread against the band.
Dead members (a member key with no session) are shown as dead.

`)
		fs.PrintDefaults()
	}
	_, fc, err := a.openFleet(fs, conn, args, 0, "")
	if err != nil {
		return err
	}
	defer fc.close()
	f, err := a.viewWithOffsets(ctx, fc, *budget, *tolerance)
	if err != nil {
		return err
	}
	if len(f.Events) > *moves {
		f.Events = f.Events[:max(*moves, 0)]
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(f)
	}
	writeStatus(a.stdout, f, a.now(), !*noShards)
	return nil
}

// writeStatus prints the fleet as tables.
func writeStatus(w io.Writer, f fleetview.Fleet, now time.Time, shards bool) {
	cfg := f.Config
	ids := f.Shards
	span := ""
	if len(ids) > 0 {
		span = fmt.Sprintf(" (%s … %s)", ids[0].ID, ids[len(ids)-1].ID)
	}
	n, _ := cfg.Current()
	fmt.Fprintf(w, "fleet %s · %d shards%s · index %d\n", f.Name, n, span, f.Index)
	fmt.Fprintln(w, headline(f))
	fmt.Fprintln(w, "assignor: "+assignorLine(f.Assignor, now))
	if f.Reshard != nil {
		printReshard(w, shard.Snapshot{Config: cfg}, *f.Reshard, now)
	}
	if f.Freeze != nil {
		fmt.Fprintf(w, "FROZEN %s: no rebalancing moves start, only failover ('shardctl unfreeze' lifts it)\n", markText(f.Freeze, now))
	}
	if line := queueLine(f); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := loadLine(f); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := versionsLine(f); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := stepsLine(f); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := offsetsWarning(f); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := historyWarning(f); line != "" {
		fmt.Fprintln(w, line)
	}

	if line := zonesLine(f); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := rulesLine(f); line != "" {
		fmt.Fprintln(w, line)
	}

	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	loads := f.Load != nil
	zoned := len(f.Zones) > 0
	labelled := slices.ContainsFunc(f.Workers, func(w fleetview.Worker) bool { return len(w.Labels) > 0 })
	header := "WORKER\tSTATE\tOWNED\tASSIGNED\t"
	if zoned {
		header = "ZONE\t" + header
	}
	if labelled {
		header += "LABELS\t"
	}
	if loads {
		header += "LOAD\tLOAD/SHARE\t"
	}
	fmt.Fprintln(tw, header+"VERSION\tSESSION\tSTARTED\tADDRESS")
	workers := f.Workers
	if zoned { // grouped by zone, as the assignor splits the shards
		workers = slices.Clone(workers)
		slices.SortStableFunc(workers, func(a, b fleetview.Worker) int { return cmp.Compare(a.Zone, b.Zone) })
	}
	for _, wk := range workers {
		if zoned {
			fmt.Fprintf(tw, "%s\t", orDash(wk.Zone))
		}
		assigned := fmt.Sprint(wk.Assigned)
		switch {
		case wk.Stuck:
			assigned += " stuck"
		case wk.Probation:
			assigned += " probation"
		}
		loadCols := ""
		if labelled {
			loadCols = orDash(labelText(wk.Labels)) + "\t"
		}
		if loads {
			loadCols += loadCells(f, wk)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s%s\t%s\t%s\t%s\n", wk.ID, workerState(wk), wk.Shards, assigned, loadCols, orDash(wk.Version),
			short(string(wk.Session)), stamp(wk.Started, now), orDash(wk.Address))
	}
	if len(f.Workers) == 0 {
		fmt.Fprintln(tw, "(no workers)")
	}
	tw.Flush()
	for _, wk := range f.Workers {
		if wk.Cordon != nil && wk.Live() {
			fmt.Fprintf(w, "  %s cordoned %s: keeps what it has, given nothing new\n", wk.ID, markText(wk.Cordon, now))
		}
		if wk.Returning {
			what := "restarting"
			if wk.Live() {
				what = "stopping to restart"
			}
			fmt.Fprintf(w, "  %s %s: its shards are reserved for it until %s\n", wk.ID, what, until(wk.RejoinUntil, now))
		}
	}

	if shards {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		lags := false
		for _, s := range f.Shards {
			lags = lags || s.Lag != nil
		}
		header := "SHARD\tOWNER\tASSIGNED\tTOKEN\tSINCE\t"
		if loads {
			header += "LOAD\t"
		}
		if f.HasOffsets {
			header += "OFFSET\tFLOOR\t"
			if lags {
				header += "LAG\t"
			}
		}
		fmt.Fprintln(tw, header+"WHY IT LAST MOVED")
		for _, s := range f.Shards {
			owner, since := s.Owner, stamp(s.Since, now)
			switch s.State {
			case fleetview.ShardFree:
				owner, since = "(free)", "-"
			case fleetview.ShardOrphaned:
				owner = "(orphaned)"
			}
			token := "-"
			if s.State != fleetview.ShardFree {
				token = fmt.Sprint(s.Token)
			}
			row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t", s.ID, owner, orDash(s.Assigned), token, since)
			if loads {
				row += shardLoadCell(s)
			}
			if f.HasOffsets {
				row += fmt.Sprintf("%d\t%d\t", deref(s.Offset), derefToken(s.Floor))
				if lags {
					lag := "-"
					if s.Lag != nil {
						lag = fmt.Sprint(*s.Lag)
					}
					row += lag + "\t"
				}
			}
			fmt.Fprintln(tw, row+s.Why)
		}
		tw.Flush()
	}

	if len(f.Events) > 0 {
		fmt.Fprintf(w, "\nLATEST ACQUISITIONS (from the shard keys; 'shardctl watch' follows every change)\n")
		for _, e := range f.Events {
			fmt.Fprintf(w, "%s  %s\n", stamp(e.At, now), e)
		}
	}
	if len(f.Problems) > 0 {
		// Not "ignored by the workers": a P/config rewritten under them is
		// ignored, but the shard keys outside it are theirs and served.
		fmt.Fprintf(w, "\nPROBLEMS under the prefix:\n  %s\n", strings.Join(f.Problems, "\n  "))
	}
}

func derefToken(p *shard.Token) shard.Token {
	if p == nil {
		return 0
	}
	return *p
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// versionsLine names the releases and protocols the live workers run, and
// says MIXED when there is more than one: a roll in progress, or one that
// stopped halfway.
func versionsLine(f fleetview.Fleet) string {
	if len(f.Versions) == 0 {
		return ""
	}
	parts := make([]string, len(f.Versions))
	for i, v := range f.Versions {
		parts[i] = fmt.Sprintf("%s (protocol %d) ×%d", v.Release, v.Protocol, v.Workers)
	}
	line := "versions: " + strings.Join(parts, ", ")
	if f.Config != nil && f.Config.Generation > 0 {
		line += fmt.Sprintf("; generation %d", f.Config.Generation)
	}
	if f.Mixed() {
		line = "MIXED " + line + ": live workers run different builds (a roll in progress?)"
	}
	return line
}

// zonesLine says what each zone's live workers own against the share its
// capacity gives it; "" when no live worker has a zone.
func zonesLine(f fleetview.Fleet) string {
	if len(f.Zones) == 0 {
		return ""
	}
	parts := make([]string, len(f.Zones))
	for i, z := range f.Zones {
		parts[i] = fmt.Sprintf("%s %d of %.1f (%d workers)", orDash(z.Name), z.Shards, z.Share, z.Workers)
	}
	line := "zones (owned of share): " + strings.Join(parts, " · ")
	for _, sw := range f.StepsWaiting {
		if sw.Step == shard.StepZones {
			line += " — not in effect: the assignor ignores zones until every live worker speaks the zones step"
		}
	}
	return line
}

// rulesLine says how many placement rules the fleet has and which shards
// they strand; "" without rules.
func rulesLine(f fleetview.Fleet) string {
	if f.Policy == nil || len(f.Policy.Rules) == 0 {
		return ""
	}
	line := fmt.Sprintf("placement rules: %d (shardctl rules lists them)", len(f.Policy.Rules))
	for _, sw := range f.StepsWaiting {
		if sw.Step == shard.StepRules {
			line += " — not in effect: the assignor ignores them until every live worker speaks the rules step"
		}
	}
	if len(f.Unplaceable) > 0 {
		line += "\nUNPLACEABLE: " + unplaceableLine(f.Unplaceable)
	}
	return line
}

// labelText is a worker's labels as k=v,k2=v2, sorted.
func labelText(labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}

// stepsLine says which protocol steps wait for live workers that do not
// speak them, and what waits with them.
func stepsLine(f fleetview.Fleet) string {
	var lines []string
	for _, sw := range f.StepsWaiting {
		line := fmt.Sprintf("STEP WAITING: %q is not spoken by live workers %s", sw.Step, strings.Join(sw.Workers, ", "))
		if sw.Step == shard.StepZones {
			line += ": shards are placed without regard to zones until they are upgraded or stopped"
		}
		if sw.Step == shard.StepRules {
			line += ": placement rules are not followed, and 'shardctl rules' refuses to write any, until they are upgraded or stopped"
		}
		if sw.Step == shard.StepStandbys {
			line += ": no standbys are given (every move starts cold), and 'shardctl balance' refuses a prepare timeout or standbys, until they are upgraded or stopped"
		}
		if sw.Step == shard.StepHistory {
			line += ": the ownership history ('shardctl history') is not recorded until they are upgraded or stopped"
		}
		if sw.Step == shard.StepGenerations {
			line += ": 'shardctl recover' refuses until they are upgraded or stopped"
			if f.Config != nil && f.Config.Generation > 0 {
				line += fmt.Sprintf(", and in this fleet (generation %d) their claims are refused: they own nothing", f.Config.Generation)
			}
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// offsetsWarning says when the offsets store shardctl was given holds no
// fence for any shard the fleet's workers own: every owner fences its claim
// there before it runs, so that store is not this fleet's (another table,
// another prefix, a store the workers do not use).
func offsetsWarning(f fleetview.Fleet) string {
	if !f.HasOffsets {
		return ""
	}
	owned := 0
	for _, s := range f.Shards {
		if s.State != fleetview.ShardOwned {
			continue
		}
		owned++
		if s.Floor != nil && *s.Floor > 0 {
			return ""
		}
	}
	if owned == 0 {
		return ""
	}
	return fmt.Sprintf("WARNING: the offsets store holds no fence for any of the %d owned shards: every owner fences its claim there first, so it is not this fleet's store (another table or prefix?); the OFFSET and FLOOR columns below are not the fleet's", owned)
}

// historyWarning names the shards whose lock token is below the store's
// floor: their owners' fences are refused, and when no newer owner raised
// the floor the coordinator's history is older than the store's (rebuilt
// empty, or restored from an older snapshot).
func historyWarning(f fleetview.Fleet) string {
	var behind []string
	for _, id := range f.HistoryBehind {
		if s, ok := f.Shard(id); ok && s.Floor != nil {
			behind = append(behind, fmt.Sprintf("%s (token %d, floor %d)", s.ID, s.Token, *s.Floor))
		}
	}
	total := len(behind)
	if total == 0 {
		return ""
	}
	more := ""
	if total > 3 {
		more = fmt.Sprintf(" and %d more", total-3)
		behind = behind[:3]
	}
	return fmt.Sprintf("HISTORY BEHIND: %d held shards' tokens are below the offsets store's floors: %s%s. Their fences are refused and they do not run: "+
		"the coordinator's history is older than the store's (rebuilt empty, or restored from an older snapshot). Once every worker uses this coordinator, "+
		"recover with 'shardctl recover -prefix %s -offsets …' (docs/operations.md, \"The coordinator lost its history\")",
		total, strings.Join(behind, ", "), more, f.Name)
}

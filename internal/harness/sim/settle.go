package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardlease/shardlease/assignor"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// settle waits, from the end of the last fault, until no reshard runs and
// every shard of the stored config's current layout is owned by a running
// worker, every running worker is a live member that agrees
// with the coordinator about what it owns, counts differ by at most one,
// and exactly one of them is the assignor; and then checks that the fleet stays that way for a few rounds. It
// returns how long settling took; taking longer than bound is a violation.
func (r *run) settle(from, bound time.Duration) time.Duration {
	if l := r.sched.Setup.Load; l.On {
		return r.settleLoad(from, bound+l.settleBound(r.sched.Setup))
	}
	var why string
	for {
		if why = r.unsettled(); why == "" {
			break
		}
		if r.c.elapsed()-from > bound {
			r.c.violate("the fleet has not settled %v after the last fault (bound %v): %s\n%s", r.c.elapsed()-from, bound, why, r.diagnose())
			return r.c.elapsed() - from
		}
		if !r.advanceTo(r.c.elapsed() + checkEvery) {
			return r.c.elapsed() - from
		}
	}
	took := r.c.elapsed() - from
	before := r.snapshot()
	owners := before.Owners()
	if !r.advanceTo(r.c.elapsed() + stableFor) {
		return took
	}
	if why := r.unsettled(); why != "" {
		r.c.violate("the fleet settled %v after the last fault, then came apart: %s\n%s", took, why, r.diagnose())
	} else if snap := r.snapshot(); fmt.Sprint(snap.Owners()) != fmt.Sprint(owners) {
		r.c.violate("the fleet settled %v after the last fault, then kept moving shards: %v, then %v", took, owners, snap.Owners())
	} else if snap.Assignor.Token != before.Assignor.Token {
		r.c.violate("the fleet settled %v after the last fault, then elected another assignor: epoch %d (%s), then %d (%s)",
			took, before.Assignor.Token, before.Assignor.Worker, snap.Assignor.Token, snap.Assignor.Worker)
	}
	return took
}

func (r *run) snapshot() shard.Snapshot {
	snap, err := r.coord.Fleet().Watch(context.Background(), 0)
	if err != nil {
		r.c.violate("snapshot: %v", err)
	}
	return snap
}

// unsettled says what keeps the fleet from being settled, or "" if nothing.
func (r *run) unsettled() string {
	snap := r.snapshot()
	owners := snap.Owners()
	counts := map[string]int{}
	for _, m := range r.running() {
		ms, ok := snap.Member(m.ID)
		if !ok || !ms.Live() {
			return fmt.Sprintf("worker %s is not a live member", m.ID)
		}
		counts[m.ID] = 0
	}
	for _, ms := range snap.Members {
		if _, running := counts[ms.ID]; ms.Live() && !running {
			// A crashed worker whose session has not expired yet: the
			// planner still gives it a quota.
			return fmt.Sprintf("member %s is live, but its worker is not running", ms.ID)
		}
	}
	cfg := shard.Config{Shards: r.sched.Setup.Shards}
	if snap.Config != nil {
		cfg = *snap.Config
	}
	if rp, ok := snap.Reshard(); ok {
		return fmt.Sprintf("the reshard to %d shards named %s-* still runs: parents open %v, children waiting %v, openable %v",
			rp.Layout.Shards, rp.Layout.Name, rp.Open, rp.Waiting, rp.Openable)
	}
	for _, id := range cfg.IDs() { // no reshard runs: the current layout's shards
		w, ok := owners[id]
		if !ok {
			return fmt.Sprintf("shard %s is not owned by a live member", id)
		}
		if _, ok := counts[w]; !ok {
			return fmt.Sprintf("shard %s is owned by %s, which is not running", id, w)
		}
		counts[w]++
	}
	if why := r.assignorUnsettled(snap); why != "" {
		return why
	}
	if r.sched.Setup.Load.On {
		if why := r.pendingMoves(snap); why != "" {
			return why
		}
		if why := r.viewLag(snap); why != "" {
			return why
		}
	} else if why := countsUnsettled(counts, r.sched.Setup); why != "" {
		return why
	}
	for _, m := range r.running() {
		st := m.Worker().Status()
		if st.State != worker.StateActive {
			return fmt.Sprintf("worker %s is %s", m.ID, st.State)
		}
		mine := st.Owned()
		var theirs []shard.ID
		for id, w := range owners {
			if w == m.ID {
				theirs = append(theirs, id)
			}
		}
		slices.Sort(mine)
		slices.Sort(theirs)
		if !slices.Equal(mine, theirs) {
			return fmt.Sprintf("worker %s runs handlers for %v, the coordinator has it own %v", m.ID, mine, theirs)
		}
	}
	return ""
}

// countsUnsettled says why the running workers' owned counts are not
// balanced, or "": without zones they differ by at most one; with zones,
// each zone holds the floor or the ceiling of its share (its running
// workers' part of all of them, every weight 1) and within each zone
// counts differ by at most one.
func countsUnsettled(counts map[string]int, su Setup) string {
	byZone := map[string][]int{}
	total := 0
	for id, n := range counts {
		byZone[su.ZoneOf(id)] = append(byZone[su.ZoneOf(id)], n)
		total += n
	}
	for z, ns := range byZone {
		if spread := slices.Max(ns) - slices.Min(ns); spread > 1 {
			return fmt.Sprintf("owned counts %v differ by %d within zone %q", counts, spread, z)
		}
		held := 0
		for _, n := range ns {
			held += n
		}
		if su.Zones > 0 {
			share := float64(total) * float64(len(ns)) / float64(len(counts))
			if d := float64(held) - share; d <= -1 || d >= 1 {
				return fmt.Sprintf("zone %q holds %d shards, its share is %.2f (owned counts %v)", z, held, share, counts)
			}
		}
	}
	return ""
}

// diagnose describes the fleet for a liveness violation: the coordinator's
// view, what the assignor's own step would decide on it (uncapped), and
// each worker's own view.
func (r *run) diagnose() string {
	var b strings.Builder
	snap := r.snapshot()
	owners := snap.Owners()
	for _, m := range snap.Members {
		fmt.Fprintf(&b, "    member %s session %q draining %v\n", m.ID, m.Session, m.Draining)
	}
	plan, err := assignor.Plan(snap, assignor.Following(snap, shard.BalancePolicy{}), time.Now())
	if err != nil {
		fmt.Fprintf(&b, "    plan: %v\n", err)
	}
	target := map[shard.ID]string{}
	for _, mv := range plan.Moves {
		target[mv.Shard] = mv.To
	}
	for _, st := range snap.Shards {
		fmt.Fprintf(&b, "    %s token %d session %q owner %s moves to %q (%s; released %s)\n",
			st.Shard, st.Token, st.Session, owners[st.Shard], target[st.Shard], st.Owner.Why, st.Owner.Released)
	}
	fmt.Fprintf(&b, "    assignor %s epoch %d session %q\n", snap.Assignor.Worker, snap.Assignor.Token, snap.Assignor.Session)
	if ps := r.untoldParents(snap); len(ps) > 0 {
		fmt.Fprintf(&b, "    parents %v have run for over %v on a worker whose key asks to close them, their handlers never told (Claim.Closing)\n", ps, untoldAfter)
	}
	for id, a := range snap.Assignments {
		mem, _ := assignor.Remembered(a)
		fmt.Fprintf(&b, "    assignment %s epoch %d as of %d: %v free %v close %v waiting %d since %v stuck %v (%q)\n",
			id, a.Epoch, a.AsOf, a.Shards, a.Free, a.Close, mem.Waiting, mem.WaitingSince.Format("15:04:05.000"), mem.Stuck, mem.StuckSession)
	}
	for _, m := range r.running() {
		st := m.Worker().Status()
		fmt.Fprintf(&b, "    worker %s: %s session %s:", m.ID, st.State, st.Session)
		for _, sh := range st.Shards {
			fmt.Fprintf(&b, " %s@%d=%s", sh.Shard, sh.Token, sh.State)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// assignorUnsettled says why the fleet has not exactly one assignor, or ""
// if it has: P/assignor held by a running worker's current session, and
// that worker, and no other, leading at the lock's epoch.
func (r *run) assignorUnsettled(snap shard.Snapshot) string {
	k := snap.Assignor
	if k.Session == "" {
		return "nobody holds P/assignor"
	}
	if m := r.fleet.Member(k.Worker); m == nil || !m.Running() || m.Ext.session() != k.Session {
		return fmt.Sprintf("P/assignor is held by %s's session %s, not a running worker's current session", k.Worker, k.Session)
	}
	for _, m := range r.running() {
		switch epoch := m.Worker().Status().AssignorEpoch; {
		case m.ID == k.Worker && epoch != k.Token:
			return fmt.Sprintf("%s holds P/assignor at epoch %d but leads at epoch %d", m.ID, k.Token, epoch)
		case m.ID != k.Worker && epoch != 0:
			return fmt.Sprintf("%s leads at epoch %d while %s holds P/assignor at epoch %d", m.ID, epoch, k.Worker, k.Token)
		}
	}
	return ""
}

// untoldAfter is how long a parent's handler must have run, with its
// key asking to close it, before untoldParents names it: a watch round
// and a reconcile take a fraction of that.
const untoldAfter = 5 * time.Second

// untoldParents lists, for diagnose, the open parents of the reshard in
// progress in snap whose holder's assignment key asks it to close them,
// and whose handler has run for untoldAfter without seeing
// Claim.Closing. (Before c61f9e6 a worker that acquired a parent in the
// reconcile in which its key asked to close it never told it, and the
// reshard stalled.)
func (r *run) untoldParents(snap shard.Snapshot) []shard.ID {
	rp, ok := snap.Reshard()
	if !ok {
		return nil
	}
	var out []shard.ID
	for _, p := range rp.Open {
		st, _ := snap.Shard(p)
		if !st.Held() || !slices.Contains(snap.Assignments[st.Owner.Worker].Close, p) {
			continue
		}
		if r.lineage.untold(shard.Claim{Shard: p, Token: st.Token}, r.c.elapsed()-untoldAfter) {
			out = append(out, p)
		}
	}
	return out
}

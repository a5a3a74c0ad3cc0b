package worker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/internal/history"
	"github.com/shardlease/shardlease/shard"
)

// storedHistory reads and decodes P/history.
func (f *fleet) storedHistory() history.Log {
	f.t.Helper()
	value, _, err := f.coord.History().Read(context.Background())
	if err != nil {
		f.t.Fatalf("reading P/history: %v", err)
	}
	l, err := history.Decode(value)
	if err != nil {
		f.t.Fatalf("decoding P/history: %v", err)
	}
	return l
}

// TestHistoryOutlivesItsAssignor: the assignor records every worker's
// acquisitions into P/history; when its worker crashes, the next assignor
// carries the same log on, recording the crashed worker's shards as
// expired and taken by others, each acquisition once, and explain names
// the crashed worker for the tokens it held.
func TestHistoryOutlivesItsAssignor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 12)
		for _, id := range []string{"a", "b", "c"} {
			f.start(id, nil)
		}
		settle(10 * time.Second)
		before := f.snapshot()
		if len(before.Owners()) != 12 {
			t.Fatalf("owners after 10 s: %v, want all 12 shards owned", before.Owners())
		}
		l := f.storedHistory()
		for _, st := range before.Shards {
			if e := l.Explain(st.Shard, st.Token); e.Tenure.Began == nil || e.Tenure.Worker != st.Owner.Worker {
				t.Fatalf("the history does not name %s as %s's owner at token %d: %s", st.Owner.Worker, st.Shard, st.Token, l.Of(st.Shard))
			}
		}

		old := f.assignorOf().Worker
		f.running[old].faults.Set(faults.Fail)
		settle(testPolicy.TTL + testPolicy.LockDelay + 10*time.Second)
		if now := f.assignorOf().Worker; now == old || now == "" {
			t.Fatalf("assignor after the crash: %q", now)
		}
		l = f.storedHistory()
		seen := map[string]bool{}
		for _, c := range l.Changes {
			key := fmt.Sprintf("%s %s@%d", c.Kind, c.Shard, c.Token)
			if seen[key] {
				t.Errorf("recorded twice: %s", c)
			}
			seen[key] = true
		}
		for _, st := range before.Shards {
			if st.Owner.Worker != old {
				continue
			}
			ts := l.Tenures(st.Shard)
			i := slices.IndexFunc(ts, func(tn history.Tenure) bool { return tn.Token == st.Token })
			switch {
			case i < 0 || ts[i].Worker != old || ts[i].Ended == nil:
				t.Errorf("%s: the crashed %s's tenure at token %d has no end in %v", st.Shard, old, st.Token, l.Of(st.Shard))
			case ts[i].Ended.Kind != history.Expired && ts[i].Ended.Kind != history.Acquired:
				t.Errorf("%s: the crashed worker's tenure ended %s, want expired", st.Shard, ts[i].Ended)
			case i+1 >= len(ts) || ts[i+1].Worker == old:
				t.Errorf("%s: no other worker took it after the crash: %v", st.Shard, l.Of(st.Shard))
			}
		}
		f.running[old].faults.Set(faults.Healthy)
	})
}

// withoutHistoryStep makes a worker join as release 0.1.0 would, without
// shard.StepHistory in its member key.
func withoutHistoryStep(c shard.Coordinator) shard.Coordinator {
	return shard.Intercept(c, func(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
		if call.Op == shard.OpJoin {
			call.Member.Steps = slices.DeleteFunc(slices.Clone(call.Member.Steps), func(s string) bool { return s == shard.StepHistory })
		}
		return invoke(ctx)
	})
}

// TestHistoryWaitsForEveryMember: while a live member lacks
// shard.StepHistory, nothing is written to P/history; once it leaves, the
// log is written, with what happened while it waited.
func TestHistoryWaitsForEveryMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 8)
		f.start("a", nil)
		f.startWrapped(f.config("old", f.events.waiting("old")), withoutHistoryStep)
		settle(10 * time.Second)
		if len(f.owners()) != 8 {
			t.Fatalf("owners %v, want all 8 shards owned", f.owners())
		}
		if value, _, _ := f.coord.History().Read(context.Background()); value != nil {
			t.Fatalf("P/history was written while a member without the step was live: %s", value)
		}
		if err := f.stop("old"); err != nil {
			t.Fatalf("stopping old: %v", err)
		}
		settle(10 * time.Second)
		// old released its shards and its session ended at one instant:
		// the log, written once it left, records what changed while it
		// waited, either as old's releases and a's acquisitions or, when
		// a took them before old's session ended (the two listings the
		// recorder compares then straddle both), as a's acquisitions from
		// old.
		l := f.storedHistory()
		var gone int
		for _, c := range l.Changes {
			if c.Worker == "old" && c.Kind == history.Released || c.Kind == history.Acquired && c.From == "old" {
				gone++
			}
		}
		if gone == 0 {
			t.Fatalf("the log after the old member left records nothing of its shards going: %v", l.Changes)
		}
	})
}

// TestHistoryLeavesAnotherFormatAlone: a P/history the next assignor
// cannot read (a newer release's format, an edit) is not overwritten;
// once an operator clears it, the assignor records again within its
// recheck.
func TestHistoryLeavesAnotherFormatAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 8)
		f.start("a", nil)
		f.start("b", nil)
		settle(10 * time.Second)
		edit := func(value string) { // as an operator's PUT would, with the assignor's own session
			as := f.assignorOf()
			if err := f.coord.History().Record(context.Background(), as.Session, as.Token, []byte(value)); err != nil {
				t.Fatal(err)
			}
		}
		newer := `{"v":2,"changes":"a newer release's"}`
		edit(newer)
		if err := f.stop(f.assignorOf().Worker); err != nil { // the next term reads the log
			t.Fatal(err)
		}
		f.start("c", nil) // moves shards: changes to record
		settle(40 * time.Second)
		if value, _, _ := f.coord.History().Read(context.Background()); string(value) != newer {
			t.Fatalf("P/history of another format was overwritten: %.200s", value)
		}
		edit("")
		if err := f.stop("c"); err != nil {
			t.Fatal(err)
		}
		settle(40 * time.Second)
		l := f.storedHistory()
		if len(l.Changes) == 0 {
			t.Fatalf("after P/history was cleared, nothing was recorded again")
		}
	})
}

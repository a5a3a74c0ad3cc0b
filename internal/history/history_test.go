package history

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

// fleet builds listings: each shard held (by worker, session worker+"-s",
// at token) or free with the reason its last owner released it.
type fleet struct {
	index  uint64
	shards map[shard.ID]shard.ShardState
}

func newFleet() *fleet { return &fleet{index: 10, shards: map[shard.ID]shard.ShardState{}} }

func (f *fleet) take(id shard.ID, worker string, why shard.Reason) shard.Token {
	f.index++
	tok := shard.Token(f.index)
	f.shards[id] = shard.ShardState{Shard: id, Session: shard.SessionID(worker + "-s"), Token: tok,
		Owner: shard.Owner{Worker: worker, Why: shard.Why{Reason: why}, Since: t0.Add(time.Duration(f.index) * time.Second)}}
	return tok
}

func (f *fleet) release(id shard.ID, why shard.Reason) {
	f.index++
	st := f.shards[id]
	st.Session, st.Token, st.Owner.Released = "", shard.Token(f.index), why
	f.shards[id] = st
}

func (f *fleet) expire(id shard.ID) {
	f.index++
	st := f.shards[id]
	st.Session = ""
	f.shards[id] = st
}

func (f *fleet) listing() shard.Snapshot {
	s := shard.Snapshot{Index: f.index}
	for _, st := range f.shards {
		s.Shards = append(s.Shards, st)
	}
	return s
}

func observe(t *testing.T, r *Recorder, f *fleet) []Change {
	t.Helper()
	return r.Observe(f.listing(), t0.Add(time.Duration(f.index)*time.Second))
}

func kinds(cs []Change) string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s %s %s@%d", c.Shard, c.Kind, c.Worker, c.Token))
	}
	return strings.Join(out, "; ")
}

// TestRecorderCarriesOnAcrossAssignors: a second recorder seeded with the
// first one's stored log records what changed while none watched, and
// nothing twice.
func TestRecorderCarriesOnAcrossAssignors(t *testing.T) {
	f := newFleet()
	var r1 Recorder
	if err := r1.Seed(nil); err != nil {
		t.Fatal(err)
	}
	f.take("s-0", "w1", shard.ReasonInitial)
	f.take("s-1", "w1", shard.ReasonInitial)
	if got := kinds(observe(t, &r1, f)); got != "s-0 acquired w1@11; s-1 acquired w1@12" {
		t.Fatalf("first listing of a fleet with no log: %s", got)
	}
	f.release("s-1", shard.ReasonRebalance)
	tok := f.take("s-1", "w2", shard.ReasonRebalance)
	f.take("s-2", "w2", shard.ReasonInitial)
	got := kinds(observe(t, &r1, f))
	if want := fmt.Sprintf("s-1 acquired w2@%d; s-2 acquired w2@%d", tok, tok+1); got != want {
		t.Fatalf("second listing: %s, want %s (a release and a take between listings show as one move)", got, want)
	}
	if !r1.Pending() {
		t.Fatal("changes recorded but nothing pending")
	}
	stored, err := r1.Encode()
	if err != nil {
		t.Fatal(err)
	}
	r1.Written()
	observe(t, &r1, f)
	if r1.Pending() {
		t.Fatal("a listing with no change left the log pending: every listing would be written")
	}

	// No assignor: w2's session ends, w1 releases s-0 and w3 takes it.
	f.expire("s-2")
	f.release("s-0", shard.ReasonDrain)
	t3 := f.take("s-0", "w3", shard.ReasonDrain)

	var r2 Recorder
	if err := r2.Seed(stored); err != nil {
		t.Fatal(err)
	}
	got = kinds(observe(t, &r2, f))
	if want := fmt.Sprintf("s-0 acquired w3@%d; s-2 expired w2@15", t3); got != want {
		t.Fatalf("the next assignor's first listing: %s, want %s", got, want)
	}
	if cs := r2.Log().Changes; len(cs) != 6 || cs[0].Shard != "s-0" || cs[0].Kind != Acquired {
		t.Fatalf("the log after two assignors: %s", kinds(cs))
	}
}

// TestRecorderSkipsWhatTheLogDropped: an acquisition older than the log's
// AsOf that the log no longer holds is not recorded again.
func TestRecorderSkipsWhatTheLogDropped(t *testing.T) {
	f := newFleet()
	var r1 Recorder
	_ = r1.Seed(nil)
	for i := range Keep + 5 {
		f.take(shard.ID(fmt.Sprintf("s-%04d", i)), "w1", shard.ReasonInitial)
	}
	observe(t, &r1, f)
	if n := len(r1.Log().Changes); n != Keep {
		t.Fatalf("the log keeps %d changes, want %d", n, Keep)
	}
	stored, _ := r1.Encode()
	var r2 Recorder
	_ = r2.Seed(stored)
	if cs := observe(t, &r2, f); len(cs) != 0 {
		t.Fatalf("a new assignor recorded again %d acquisitions the log dropped: %s", len(cs), kinds(cs[:3]))
	}
}

// TestRecorderNeverOverwritesAnotherFormat: a log of a newer format is
// refused, and an unseeded recorder records nothing.
func TestRecorderNeverOverwritesAnotherFormat(t *testing.T) {
	var r Recorder
	err := r.Seed([]byte(`{"v":2,"changes":[]}`))
	if err == nil || !strings.Contains(err.Error(), "format 2") {
		t.Fatalf("Seed(a format 2 log) = %v, want an error naming the format", err)
	}
	f := newFleet()
	f.take("s-0", "w1", shard.ReasonInitial)
	if cs := observe(t, &r, f); len(cs) != 0 || r.Pending() {
		t.Fatalf("an unseeded recorder recorded %s", kinds(cs))
	}
	if _, err := Decode([]byte(`{"v":1,"changes":"no"}`)); err == nil {
		t.Fatal("Decode accepted a malformed log")
	}
}

// TestEncodeFitsOneKey: a log of long names is trimmed from its oldest end
// to fit shard.MaxHistoryBytes.
func TestEncodeFitsOneKey(t *testing.T) {
	var l Log
	long := strings.Repeat("w", 600)
	for i := range Keep {
		l.Append([]Change{{Kind: Acquired, Shard: shard.ID(fmt.Sprintf("s-%d", i)), Worker: long, Token: shard.Token(i + 1), Reason: "initial"}})
	}
	v, err := l.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if len(v) > shard.MaxHistoryBytes {
		t.Fatalf("encoded %d bytes, over %d", len(v), shard.MaxHistoryBytes)
	}
	back, err := Decode(v)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(back.Changes); n == 0 || n == Keep || back.Changes[n-1].Token != Keep {
		t.Fatalf("after trimming: %d changes, last token %d; want fewer than %d ending with the newest", n, back.Changes[n-1].Token, Keep)
	}
}

// TestExplain: a token is told as the tenure that held it, with its
// start, end and neighbours; a token the log lacks is placed between
// the tenures around it, or said to be older than the log.
func TestExplain(t *testing.T) {
	f := newFleet()
	var r Recorder
	_ = r.Seed(nil)
	observe(t, &r, f)
	t1 := f.take("s-0", "w1", shard.ReasonInitial)
	observe(t, &r, f)
	f.expire("s-0")
	observe(t, &r, f)
	t2 := f.take("s-0", "w2", shard.ReasonOrphaned)
	observe(t, &r, f)
	f.index += 2 // a later listing that still shows w2 holding it
	observe(t, &r, f)
	f.release("s-0", shard.ReasonShutdown)
	t3 := f.take("s-0", "w3", shard.ReasonFree)
	observe(t, &r, f)
	l := r.Log()

	e := l.Explain("s-0", t2)
	if e.Tenure.Worker != "w2" || e.Tenure.Began == nil || e.Tenure.Ended == nil || e.Tenure.Ended.Kind != Acquired || e.Tenure.Ended.Token != t3 {
		t.Fatalf("Explain(t2) = %+v, want w2's tenure ended by w3's acquisition", e.Tenure)
	}
	if e.Before == nil || e.Before.Worker != "w1" || e.Before.Ended == nil || e.Before.Ended.Kind != Expired || e.After == nil || e.After.Worker != "w3" {
		t.Fatalf("Explain(t2) neighbours = %+v / %+v, want w1 (expired) and w3", e.Before, e.After)
	}
	began, seen, by := e.Tenure.Began.Since, e.Tenure.Ended.Seen, e.Tenure.Ended.Since
	if seen.IsZero() || !seen.After(began) || !by.After(seen) {
		t.Fatalf("w2's tenure: began %v, last seen held %v, ended by %v (w3's acquisition): want them in that order", began, seen, by)
	}
	for at, want := range map[time.Time]Verdict{began.Add(-time.Second): NotInForce, began: InForce, seen.Add(-time.Nanosecond): InForce,
		seen: Unknown, by: NotInForce, e.Tenure.Ended.At: NotInForce} {
		if got := e.Tenure.At(at); got != want {
			t.Errorf("w2's tenure (began %v, seen held %v, ended by %v) at %v: %v, want %v", began, seen, by, at, got, want)
		}
	}
	if bare := (Tenure{Ended: e.Tenure.Ended}); bare.At(began) != Unknown || bare.At(by) != NotInForce {
		t.Errorf("a tenure whose start the log lacks: %v before its end, %v after; want unknown, not in force", bare.At(began), bare.At(by))
	}
	if e := l.Explain("s-0", t1+1); e.Tenure.Began != nil || e.Window || e.Before == nil || e.Before.Token != t1 || e.After.Token != t2 {
		t.Fatalf("Explain(a token the log lacks) = %+v, want none between t1 and t2", e)
	}
	if e := l.Explain("s-0", 3); !e.Window {
		t.Fatalf("Explain(a token older than the log) = %+v, want Window", e)
	}
	if last := l.Explain("s-0", t3).Tenure; last.Ended != nil || last.At(t0.Add(time.Hour)) != InForce {
		t.Fatalf("the current tenure = %+v, want no end", last)
	}
}

// TestChangesTellAnUnseenTenure: a shard whose key, free, was written by
// another acquisition than the one last seen held ended that tenure
// unseen; the change after it tells of the other one, with its reason and
// no token, never blaming the first holder for the second's release.
func TestChangesTellAnUnseenTenure(t *testing.T) {
	f := newFleet()
	f.take("s-0", "w1", shard.ReasonInitial)
	prev := f.listing()
	f.release("s-0", shard.ReasonRebalance)
	f.take("s-0", "w2", shard.ReasonRebalance)
	f.release("s-0", shard.ReasonShutdown)
	cs := Changes(&prev, f.listing(), t0)
	if got := kinds(cs); got != "s-0 superseded w1@11; s-0 released w2@0" || !strings.Contains(cs[1].Reason, "shutdown") {
		t.Fatalf("changes %s (%v), want w1's tenure superseded and w2's released for shutdown", got, cs)
	}
	f.take("s-0", "w3", shard.ReasonFree)
	prev = f.listing()
	f.release("s-0", shard.ReasonDrain) // w3's own release: the value keeps its since
	if got := kinds(Changes(&prev, f.listing(), t0)); got != "s-0 released w3@15" {
		t.Fatalf("a plain release: %s", got)
	}
}

// TestChangesWalkBothListings: keys deleted by hand before, between and
// after the others, a key new in the next listing and a release are each
// told once, in shard order, whatever order the listings come in.
func TestChangesWalkBothListings(t *testing.T) {
	f := newFleet()
	for _, id := range []shard.ID{"s-0", "s-1", "s-2", "s-4", "s-5"} {
		f.take(id, "w1", shard.ReasonInitial) // tokens 11 to 15
	}
	prev := f.listing()
	delete(f.shards, "s-0")
	delete(f.shards, "s-2")
	delete(f.shards, "s-5")
	f.release("s-4", shard.ReasonRebalance) // 16
	f.take("s-3", "w2", shard.ReasonFree)   // 17
	want := "s-0 released w1@11; s-2 released w1@13; s-3 acquired w2@17; s-4 released w1@14; s-5 released w1@15"
	if got := kinds(Changes(&prev, f.listing(), t0)); got != want {
		t.Fatalf("changes %s, want %s", got, want)
	}
}

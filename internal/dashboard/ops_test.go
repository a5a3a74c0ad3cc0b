package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/dashboard"
	"github.com/shardlease/shardlease/internal/fleetview"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

// opsFleet is smallFleet with a cordoned by alice at at, b returning
// until rejoin, and the fleet frozen by carol at at, written as the
// workers and shardctl write them.
func opsFleet(t *testing.T, at, rejoin time.Time) *memory.Coordinator {
	t.Helper()
	c, sessions := smallFleet(t)
	ctx := context.Background()
	for id, edit := range map[string]func(*shard.Member){
		"a": func(m *shard.Member) { m.Cordon = &shard.Mark{By: "alice", At: at, Reason: "bad disk"} },
		"b": func(m *shard.Member) { m.RejoinUntil = rejoin },
	} {
		m := shard.Member{ID: id, Version: "v9", Weight: 1}
		edit(&m)
		if err := c.Members().Join(ctx, sessions[id], m); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Fleet().SetFreeze(ctx, &shard.Mark{By: "carol", At: at, Reason: "incident 42"}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOperatorStatesJSON: /api/v1/fleet carries the cordon and the freeze
// with who set them and when, the returning worker's deadline, and the
// move queue with the budget the server was given; the page has the
// banner and the queue tile the script fills.
func TestOperatorStatesJSON(t *testing.T) {
	at := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	rejoin := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	base := serve(t, dashboard.Options{Name: "orders", Coordinator: opsFleet(t, at, rejoin), MaxMovesInFlight: 16})
	f := fleetJSON(t, base, func(f fleetview.Fleet) bool { return f.Freeze != nil })
	if f.Freeze.By != "carol" || !f.Freeze.At.Equal(at) || f.Freeze.Reason != "incident 42" {
		t.Errorf("freeze %+v, want carol's at %v", f.Freeze, at)
	}
	a, _ := f.Worker("a")
	if a.Cordon == nil || a.Cordon.By != "alice" || !a.Cordon.At.Equal(at) || a.Cordon.Reason != "bad disk" {
		t.Errorf("a = %+v, want cordoned by alice at %v", a, at)
	}
	b, _ := f.Worker("b")
	if !b.Returning || !b.RejoinUntil.Equal(rejoin) {
		t.Errorf("b = %+v, want returning until %v", b, rejoin)
	}
	if f.Summary.Cordoned != 1 || f.Summary.Returning != 1 || f.Queue.Budget != 16 {
		t.Errorf("summary %+v, queue %+v; want 1 cordoned, 1 returning, budget 16", f.Summary, f.Queue)
	}
	_, page, _ := get(t, base+"/")
	for _, want := range []string{`id="freeze" class="banner frozen" hidden`, `id="tile-queue"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestOperatorStatesInChromium: the page shows the freeze banner with who
// and why, a cordon badge on a's row naming alice, a returning badge on
// b's with its deadline, and the queue tile against the budget.
func TestOperatorStatesInChromium(t *testing.T) {
	wd := startBrowser(t)
	at := time.Now().Add(-time.Minute)
	rejoin := time.Now().Add(time.Hour)
	c := opsFleet(t, at, rejoin)
	base := serve(t, dashboard.Options{Name: "ops", Coordinator: c, MaxMovesInFlight: 16})
	wd.navigate(base + "/")
	var s struct {
		Freeze, FreezeBy, Cordon, CordonTitle, Returning, Queue, QueueBudget, Workers string
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := wd.eval(`const q = s => document.querySelector(s);
const fr = q('#freeze'), cb = q('#workers tr[data-worker="a"] .badge.cordoned'), rb = q('#workers tr[data-worker="b"] .badge.returning');
return {Freeze: fr.hidden ? '' : fr.textContent, FreezeBy: fr.dataset.by || '',
  Cordon: cb ? cb.textContent : '', CordonTitle: cb ? cb.title : '', Returning: rb ? rb.textContent : '',
  Queue: q('#tile-queue .value').textContent, QueueBudget: q('#tile-queue').dataset.budget || '',
  Workers: q('#tile-workers .sub').textContent};`, &s); err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		why := ""
		switch {
		case !strings.HasPrefix(s.Freeze, "Frozen by carol since ") || !strings.Contains(s.Freeze, "incident 42") || s.FreezeBy != "carol":
			why = fmt.Sprintf("freeze banner %q (by %q), want carol's with incident 42", s.Freeze, s.FreezeBy)
		case s.Cordon != "cordoned" || !strings.Contains(s.CordonTitle, "by alice since") || !strings.Contains(s.CordonTitle, "bad disk"):
			why = fmt.Sprintf("a's cordon badge %q titled %q, want alice's", s.Cordon, s.CordonTitle)
		case !strings.HasPrefix(s.Returning, "returning by "):
			why = fmt.Sprintf("b's returning badge %q", s.Returning)
		case s.QueueBudget != "16" || !strings.HasSuffix(s.Queue, " / 16"):
			why = fmt.Sprintf("queue tile %q budget %q, want in flight / 16", s.Queue, s.QueueBudget)
		case s.Workers != "live · 0 draining · 1 cordoned · 1 returning · 0 dead":
			why = fmt.Sprintf("workers tile %q, want 1 cordoned and 1 returning", s.Workers)
		}
		if why == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not show the operator states within 10s: %s", why)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Lifting the freeze takes the banner down and is a move of its own.
	if err := c.Fleet().SetFreeze(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		var shown struct {
			Banner bool
			Moves  string
		}
		if err := wd.eval(`return {Banner: !document.getElementById('freeze').hidden,
  Moves: [...document.querySelectorAll('#moves li[data-kind="unfrozen"]')].map(li => li.textContent).join('|')};`, &shown); err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		if !shown.Banner && strings.Contains(shown.Moves, "fleet unfrozen") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the unfreeze: banner shown %v, unfrozen moves %q", shown.Banner, shown.Moves)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMixedVersionsInChromium: while the live workers run two releases, a
// banner names both with their protocol and counts; once they run one, it
// is gone.
func TestMixedVersionsInChromium(t *testing.T) {
	wd := startBrowser(t)
	c, sessions := smallFleet(t)
	ctx := context.Background()
	join := func(id, version string, protocol int) {
		if err := c.Members().Join(ctx, sessions[id], shard.Member{ID: id, Version: version, Protocol: protocol, Weight: 1}); err != nil {
			t.Fatal(err)
		}
	}
	join("a", "0.1.0", 0) // a 0.1.0 key names no protocol
	join("b", "0.2.0", 3)
	base := serve(t, dashboard.Options{Name: "mixed", Coordinator: c})
	wd.navigate(base + "/")
	banner := func() string {
		var s string
		if err := wd.eval(`const b = document.getElementById('mixed'); return b.hidden ? '' : b.textContent;`, &s); err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		return s
	}
	want := "Mixed versions: 0.1.0 (protocol 3) ×1, 0.2.0 (protocol 3) ×1"
	for deadline := time.Now().Add(10 * time.Second); !strings.HasPrefix(banner(), want); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("banner %q, want it to start with %q", banner(), want)
		}
	}
	var steps string
	if err := wd.eval(`const b = document.getElementById('steps'); return b.hidden ? '' : b.textContent;`, &steps); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(steps, `Step waiting: "generations" is not spoken by live workers a (0.1.0), b (0.2.0)`) {
		t.Errorf("steps banner %q, want both workers named: neither key names its steps", steps)
	}
	join("a", "0.2.0", 3) // the roll finished
	for deadline := time.Now().Add(10 * time.Second); banner() != ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("banner %q after every worker runs 0.2.0", banner())
		}
	}
}

// TestHistoryBehindInChromium: while held shards' tokens are below the
// offsets store's floors, a banner counts them and names the command that
// recovers; once the floors are below the tokens, it is gone.
func TestHistoryBehindInChromium(t *testing.T) {
	wd := startBrowser(t)
	c, _ := smallFleet(t)
	store := offmem.New()
	t.Cleanup(func() { _ = store.Close() })
	ctx := context.Background()
	for _, id := range []shard.ID{"stream/shard-000", "stream/shard-001"} {
		if err := store.Fence(ctx, id, 1_000_000); err != nil {
			t.Fatal(err)
		}
	}
	base := serve(t, dashboard.Options{Name: "orders", Coordinator: c, Offsets: store, Refresh: 100 * time.Millisecond})
	wd.navigate(base + "/")
	banner := func() string {
		var s string
		if err := wd.eval(`const b = document.getElementById('history'); return b.hidden ? '' : b.textContent;`, &s); err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		return s
	}
	want := "History behind: 2 held shards' tokens are below the offsets store's floors"
	for deadline := time.Now().Add(10 * time.Second); !strings.HasPrefix(banner(), want); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("banner %q, want it to start with %q", banner(), want)
		}
	}
	if !strings.Contains(banner(), "shardctl recover -prefix orders -offsets") {
		t.Errorf("banner %q does not name the command", banner())
	}
	if _, err := c.Fleet().RaiseGeneration(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The holders take their shards again in the new generation, as
	// workers would after the refused fences.
	snap, err := c.Fleet().Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range snap.Shards {
		if !st.Held() {
			continue
		}
		if err := c.Locks().Release(ctx, st.Session, []shard.Lock{shard.ShardLock(st.Shard)}, shard.ReasonLost); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Locks().Acquire(ctx, st.Session, []shard.Acquisition{shard.AcquireShard(st.Shard, shard.Why{Reason: shard.ReasonFree})}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); banner() != ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("banner %q after every holder took its shard in generation 1", banner())
		}
	}
}

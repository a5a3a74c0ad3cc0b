package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/harness/natstest"
	"github.com/shardlease/shardlease/internal/harness/pgtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The whole story against a real nats-server process and a real
// PostgreSQL, at a small size: every event applied exactly once through
// two kills, a pause with a transaction open and a join, and at least one
// transaction of the paused owner refused.
func TestExactlyOnceThroughKillsAPauseAndAJoin(t *testing.T) {
	nats := natstest.Start(t)
	pg := pgtest.Start(t)
	o := defaultOptions()
	o.natsURL, o.postgresDSN = nats.URL, pg.DSN("postgres")
	o.partitions, o.workers, o.events, o.pace = 16, 4, 100, 100*time.Millisecond
	var out bytes.Buffer
	began := time.Now()
	res, err := run(t.Context(), o, &out)
	t.Logf("transcript (%v):\n%s", time.Since(began).Round(time.Millisecond), out.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := res.check(); err != nil {
		t.Fatal(err)
	}
	if want := int64(o.partitions) * o.events; res.proof.Published != want || res.proof.Applied != want {
		t.Errorf("published %d, applied %d: want %d of each", res.proof.Published, res.proof.Applied, want)
	}
	if want := int64(o.partitions) * (o.events / o.window); res.windows.Expected != want || res.windows.Written != want {
		t.Errorf("windows: %+v, want %d expected and written", res.windows, want)
	}
	if res.cold < int64(o.partitions) || res.warm < 1 {
		t.Errorf("handler starts: %d cold, %d warm; want the first placement's %d cold at least, and some warm", res.cold, res.warm, o.partitions)
	}
	if res.proof.Refused != res.stale+res.ended || res.proof.Refused < 1 {
		t.Errorf("the proof counts %d refused transactions, the handlers %d stale + %d ended: want equal and at least 1",
			res.proof.Refused, res.stale, res.ended)
	}
	for _, want := range []string{"JetStream at " + nats.URL, "is killed holding", "stops dead", "joins", "0 twice, 0 missing, 0 not equal to the recomputation", "0 duplicates, 0 gaps: exactly once"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
}

// The proof's verdict fails on each thing it must catch.
func TestCheckCatchesEveryBreach(t *testing.T) {
	good := result{kills: 2, pauses: 1, joins: 1, stale: 1, standbys: 1, warm: 1}
	if err := good.check(); err != nil {
		t.Fatalf("a clean run judged bad: %v", err)
	}
	for name, breach := range map[string]func(*result){
		"duplicate":      func(r *result) { r.proof.Duplicates = 1 },
		"gap":            func(r *result) { r.proof.Gaps = 1 },
		"foreign":        func(r *result) { r.proof.Foreign = 1 },
		"behind":         func(r *result) { r.proof.Behind = 1 },
		"one kill":       func(r *result) { r.kills = 1 },
		"no pause":       func(r *result) { r.pauses = 0 },
		"no join":        func(r *result) { r.joins = 0 },
		"nothing stale":  func(r *result) { r.stale, r.ended = 0, 3 }, // ended by the server is not refused by the fence
		"dead owns some": func(r *result) { r.ownedByTheDead = 1 },
		"window twice":   func(r *result) { r.windows.Duplicates = 1 },
		"window missing": func(r *result) { r.windows.Missing = 1 },
		"window wrong":   func(r *result) { r.windows.Wrong = 1 },
		"never warm":     func(r *result) { r.warm = 0 },
	} {
		r := good
		breach(&r)
		if r.check() == nil {
			t.Errorf("%s: judged clean", name)
		}
	}
}

// Bad flags are refused before anything starts, naming the bad value.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--partitions", "0"}, {"--workers", "2"}, {"--events", "3"}, {"--pace", "0s"}, {"--nope"},
		{"--window", "0"}, {"--replay-cost", "-1s"}, {"--standbys", "9"},
	} {
		var stderr bytes.Buffer
		if code := cli(t.Context(), args, &bytes.Buffer{}, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
		if len(args) == 2 && !strings.Contains(stderr.String(), args[1]) {
			t.Errorf("%v: the error does not name %q: %s", args, args[1], stderr.String())
		}
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/examples/jetstream/pipeline"
	"github.com/shardlease/shardlease/internal/harness/natstest"
	"github.com/shardlease/shardlease/internal/harness/pgtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The whole story against a real nats-server process and a real
// PostgreSQL, at a small size: every event applied exactly once through
// two kills, a reshard from 16 to 32 partitions under load with a kill
// during it, a pause with a transaction open and a join; each key's events
// applied in order across the switch; at least one transaction of the
// paused owner refused.
func TestExactlyOnceThroughKillsAReshardAPauseAndAJoin(t *testing.T) {
	nats := natstest.Start(t)
	pg := pgtest.Start(t)
	o := defaultOptions()
	o.natsURL, o.postgresDSN = nats.URL, pg.DSN("postgres")
	o.partitions, o.reshardTo, o.workers, o.events, o.pace = 16, 32, 5, 200, 100*time.Millisecond
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
	if res.proof.Published != res.published || res.proof.Applied != res.published {
		t.Errorf("the stream holds %d messages, %d applied: want the %d the producer published", res.proof.Published, res.proof.Applied, res.published)
	}
	if res.windows.Expected < int64(o.partitions) || res.windows.Written != res.windows.Expected {
		t.Errorf("windows: %+v, want as many written as expected, at least one per old partition", res.windows)
	}
	if res.cold < int64(o.partitions) || res.warm < 1 {
		t.Errorf("handler starts: %d cold, %d warm; want the first placement's %d cold at least, and some warm", res.cold, res.warm, o.partitions)
	}
	if res.proof.Refused != res.stale+res.ended || res.proof.Refused < 1 {
		t.Errorf("the proof counts %d refused transactions, the handlers %d stale + %d ended: want equal and at least 1",
			res.proof.Refused, res.stale, res.ended)
	}
	if k := res.keys; k.Keys < int64(o.keysPer*o.reshardTo) || k.CrossedKeys != k.Keys || k.Crossed != k.Keys || k.Applied != k.Events {
		t.Errorf("keys: %+v; want at least %d keys, every one crossing the switch once, every keyed event applied", k, o.keysPer*o.reshardTo)
	}
	for _, want := range []string{"JetStream at " + nats.URL, "is killed holding", "the producer switches from 16 to 32 partition subjects",
		"reshard started", "is killed during the reshard", "reshard done", "stops dead", "joins",
		"0 twice, 0 missing, 0 not equal to the recomputation", "16 of 16 old partitions end with their marker",
		"0 out of order", "0 duplicates, 0 gaps; each key's order across the switch: 0 of", "exactly once, as promised"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
}

// The proof's verdict fails on each thing it must catch.
func TestCheckCatchesEveryBreach(t *testing.T) {
	good := result{kills: 3, pauses: 1, joins: 1, stale: 1, standbys: 1, warm: 1,
		reshard: reshardResult{from: 2, to: 4, done: true, killedOpen: 1}, closed: 2, childStarts: 4,
		keys: pipeline.KeyProof{Keys: 3, Events: 9, Applied: 9, Pairs: 6, Crossed: 3, CrossedKeys: 3}}
	good.proof.Markers = 2
	if err := good.check(); err != nil {
		t.Fatalf("a clean run judged bad: %v", err)
	}
	for name, breach := range map[string]func(*result){
		"duplicate":           func(r *result) { r.proof.Duplicates = 1 },
		"gap":                 func(r *result) { r.proof.Gaps = 1 },
		"foreign":             func(r *result) { r.proof.Foreign = 1 },
		"behind":              func(r *result) { r.proof.Behind = 1 },
		"two kills":           func(r *result) { r.kills = 2 },
		"no pause":            func(r *result) { r.pauses = 0 },
		"no join":             func(r *result) { r.joins = 0 },
		"nothing stale":       func(r *result) { r.stale, r.ended = 0, 3 }, // ended by the server is not refused by the fence
		"dead owns some":      func(r *result) { r.ownedByTheDead = 1 },
		"window twice":        func(r *result) { r.windows.Duplicates = 1 },
		"window missing":      func(r *result) { r.windows.Missing = 1 },
		"window wrong":        func(r *result) { r.windows.Wrong = 1 },
		"never warm":          func(r *result) { r.warm = 0 },
		"reshard unfinished":  func(r *result) { r.reshard.done = false },
		"no kill in reshard":  func(r *result) { r.reshard.killedOpen = 0 },
		"a marker missing":    func(r *result) { r.proof.Markers = 1 },
		"a parent not closed": func(r *result) { r.closed = 1 },
		"a child never ran":   func(r *result) { r.childStarts = 3 },
		"a child too early":   func(r *result) { r.shortParents = 1 },
		"key out of order":    func(r *result) { r.keys.OutOfOrder = 1 },
		"key applied twice":   func(r *result) { r.keys.Duplicates = 1 },
		"key event missing":   func(r *result) { r.keys.Gaps = 1 },
		"key event foreign":   func(r *result) { r.keys.Foreign = 1 },
		"no key crossed":      func(r *result) { r.keys.CrossedKeys = 0 },
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
		{"--partitions", "0"}, {"--workers", "4"}, {"--events", "3"}, {"--pace", "0s"}, {"--nope"},
		{"--window", "0"}, {"--replay-cost", "-1s"}, {"--standbys", "9"}, {"--reshard-to", "64"}, {"--keys", "0"},
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

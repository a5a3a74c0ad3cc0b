package pipeline

import (
	"testing"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// windowsFixture is one partition of 10 events (stream sequences 1…10,
// N = sequence) and its tables, for windows of 4 events.
func windowsFixture(t *testing.T) (*Handler, *Windows) {
	t.Helper()
	js, pool, store, tables := newFixture(t, 1, 10, "windows_test")
	w := &Windows{Size: 4}
	return &Handler{JS: js, Store: store, Pool: pool, Tables: tables, Partition: map[shard.ID]int{"stream/shard-000": 0}, Windows: w}, w
}

// events are N = from…to of partition 0, sequence N.
func events(from, to int64) []message {
	var ms []message
	for n := from; n <= to; n++ {
		ms = append(ms, message{Event: Event{N: n}, seq: uint64(n)})
	}
	return ms
}

// TestWindowsRebuildAndCatchUp: folding closes a window at every fourth
// event with its count and sum; a cold rebuild at an offset, from the
// last window row and the stream, equals folding every event up to it;
// a warm start whose standby is behind the offset catches up to it; and
// the proof tells a window written twice, one missing and one wrong.
func TestWindowsRebuildAndCatchUp(t *testing.T) {
	ctx := t.Context()
	h, w := windowsFixture(t)
	want, closed := w.fold(windowState{}, events(1, 7))
	if len(closed) != 1 || closed[0] != (windowRow{window: 0, count: 4, sum: Value(1) + Value(2) + Value(3) + Value(4), lastSeq: 4}) {
		t.Fatalf("closed %+v, want window 0 of events 1–4", closed)
	}
	if want.open != 1 || want.count != 3 || want.applied != 7 {
		t.Fatalf("state %+v, want window 1 open with 3 events, at 7", want)
	}
	// Window 0's row, as the batch that closed it wrote it.
	if _, err := h.Pool.Exec(ctx, `INSERT INTO `+h.Tables.windows().Sanitize()+` VALUES (0, 0, $1, $2, 4, 1, 'w')`, closed[0].count, closed[0].sum); err != nil {
		t.Fatal(err)
	}
	got, err := w.rebuild(ctx, h, 0, 7)
	if err != nil || got != want {
		t.Fatalf("rebuilt at 7: %+v (%v), want %+v", got, err, want)
	}

	id := shard.ID("stream/shard-000")
	behind, _ := w.fold(windowState{}, events(1, 5))
	w.left = map[shard.ID]windowState{id: behind}
	got, err = w.start(ctx, h, &worker.Claim{Claim: shard.Claim{Shard: id}, Warm: &worker.StandbyReport{Applied: 5, CaughtUp: true}}, 0, 7)
	if err != nil || got != want || w.Warm.Load() != 1 || w.Cold.Load() != 0 {
		t.Fatalf("a warm start behind the offset: %+v (%v), warm %d cold %d; want %+v, one warm start", got, err, w.Warm.Load(), w.Cold.Load(), want)
	}
	// Not caught up by its last report: its state is brought up too.
	w.left = map[shard.ID]windowState{id: behind}
	if got, err = w.start(ctx, h, &worker.Claim{Claim: shard.Claim{Shard: id}, Warm: &worker.StandbyReport{Applied: 5}}, 0, 7); err != nil || got != want || w.Warm.Load() != 2 {
		t.Fatalf("a standby not caught up: %+v (%v), warm %d; want %+v from its state", got, err, w.Warm.Load(), want)
	}
	// A state ahead of the committed offset (cannot be the offset's):
	// rebuilt cold.
	ahead, _ := w.fold(windowState{}, events(1, 9))
	w.left = map[shard.ID]windowState{id: ahead}
	if got, err = w.start(ctx, h, &worker.Claim{Claim: shard.Claim{Shard: id}, Warm: &worker.StandbyReport{Applied: 9, CaughtUp: true}}, 0, 7); err != nil || got != want || w.Cold.Load() != 1 {
		t.Fatalf("a standby ahead of the offset: %+v (%v), cold %d; want %+v rebuilt", got, err, w.Cold.Load(), want)
	}

	// Windows 0 and 1 are complete (events 1–8 of 10): 0 is written, 1 is
	// not; then 0 twice, then 1 wrong, then 1 right but not written with
	// its closing event's effect. The effects of the closing events 4 and
	// 8, as their batches wrote them with token 1:
	for _, n := range []int64{4, 8} {
		if _, err := h.Pool.Exec(ctx, `INSERT INTO `+h.Tables.effects().Sanitize()+` (partition, n, stream_seq, token, worker, published_at) VALUES (0, $1, $1, 1, 'w', now())`, n); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, dups, missing, wrong int64) {
		t.Helper()
		p, err := h.ProveWindows(ctx, 1, 4)
		if err != nil {
			t.Fatal(err)
		}
		if p.Expected != 2 || p.Duplicates != dups || p.Missing != missing || p.Wrong != wrong || p.OK() != (dups+missing+wrong == 0) {
			t.Errorf("%s: %+v, want 2 expected, %d twice, %d missing, %d wrong", what, p, dups, missing, wrong)
		}
	}
	check("window 1 never written", 0, 1, 0)
	exec := func(sql string, args ...any) {
		if _, err := h.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO `+h.Tables.windows().Sanitize()+` VALUES (0, 1, 4, $1, 8, 1, 'w')`, Value(5)+Value(6)+Value(7)+Value(8))
	check("every window once", 0, 0, 0)
	exec(`INSERT INTO `+h.Tables.windows().Sanitize()+` VALUES (0, 0, $1, $2, 4, 2, 'w')`, closed[0].count, closed[0].sum)
	check("window 0 twice", 1, 0, 0)
	exec(`UPDATE ` + h.Tables.windows().Sanitize() + ` SET sum = sum + 1 WHERE "window" = 1`)
	check("window 1 wrong", 1, 0, 1)
	exec(`UPDATE ` + h.Tables.windows().Sanitize() + ` SET sum = sum - 1, token = 3 WHERE "window" = 1`)
	check("window 1 with another token than its closing effect", 1, 0, 1)
	exec(`UPDATE ` + h.Tables.windows().Sanitize() + ` SET token = 1, last_seq = 7 WHERE "window" = 1`)
	check("window 1 closed at another sequence than its last event", 1, 0, 1)
	exec(`UPDATE ` + h.Tables.windows().Sanitize() + ` SET last_seq = 8 WHERE "window" = 1`)
	check("window 1 right again", 1, 0, 0)
}

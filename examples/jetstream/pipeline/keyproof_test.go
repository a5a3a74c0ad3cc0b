package pipeline

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shardlease/shardlease/internal/harness/pgtest"
)

// keyedStream publishes keyed events to partitions 0–1, switches to 2–5
// once the first round is acknowledged, and returns the JetStream, the
// layouts and every message by partition, as read back.
func keyedStream(t *testing.T) (jetstream.JetStream, Layout, Layout, map[int][]Event) {
	t.Helper()
	ctx := t.Context()
	srv, err := StartEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	nc, js, err := Connect(srv.URL(), "keyproof_test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if _, err := CreateStream(ctx, js); err != nil {
		t.Fatal(err)
	}
	from, to := Layout{First: 0, Count: 2}, Layout{First: 2, Count: 4}
	sw := make(chan struct{})
	var once sync.Once
	switchedAt := int64(-1)
	k := &Keyed{JS: js, Keys: ChooseKeys(1, from, to), From: from, To: to, Rounds: 12, Tail: 6, Switch: sw,
		After: func(int64) { once.Do(func() { close(sw) }) }, Switched: func(n int64) { switchedAt = n }}
	stored, err := k.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if switchedAt < 1 {
		t.Fatalf("switched after round %d, want 1 or later", switchedAt)
	}
	h := &Handler{JS: js}
	st, err := js.Stream(ctx, Stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(SubjectPrefix+">"))
	if err != nil {
		t.Fatal(err)
	}
	byPart := map[int][]Event{}
	var total int64
	for p := range to.Last() + 1 {
		if err := h.read(ctx, p, int64(info.State.Subjects[Subject(p)]), func(ev Event, _ uint64) { byPart[p] = append(byPart[p], ev) }); err != nil {
			t.Fatal(err)
		}
		total += int64(len(byPart[p]))
	}
	if total != stored {
		t.Fatalf("the stream holds %d messages, the producer stored %d", total, stored)
	}
	return js, from, to, byPart
}

// The producer ends every old partition with a marker numbered after its
// last event and none of the new ones; a key's events are numbered 1, 2, …
// in the order the stream holds them, those before the switch on its old
// partition and those after on its new one.
func TestKeyedSwitchesWithAMarker(t *testing.T) {
	_, from, to, byPart := keyedStream(t)
	type placed struct {
		seq  int64
		part int
	}
	byKey := map[int64][]placed{}
	for p, evs := range byPart {
		for i, ev := range evs {
			last := i == len(evs)-1
			if ev.Marker != (last && from.Contains(p)) {
				t.Errorf("partition %d, message %d of %d: marker %v", p, i+1, len(evs), ev.Marker)
			}
			if ev.N != int64(i+1) || ev.Partition != p {
				t.Errorf("partition %d, message %d: %+v", p, i+1, ev)
			}
			if !ev.Marker {
				byKey[ev.Key] = append(byKey[ev.Key], placed{ev.KeySeq, p})
			}
		}
	}
	for key, ps := range byKey {
		// Per partition the stream's order is the messages' order; a key's
		// events on its old partition all come before those on its new.
		seen := map[int64]bool{}
		var before, after []int64
		for _, e := range ps {
			seen[e.seq] = true
			switch e.part {
			case from.Of(key):
				before = append(before, e.seq)
			case to.Of(key):
				after = append(after, e.seq)
			default:
				t.Errorf("key %d has event %d on partition %d, neither %d nor %d", key, e.seq, e.part, from.Of(key), to.Of(key))
			}
		}
		for n := int64(1); n <= int64(len(ps)); n++ {
			if !seen[n] {
				t.Errorf("key %d: %d events, but not its event %d", key, len(ps), n)
			}
		}
		for i := range before {
			if before[i] != int64(i+1) {
				t.Errorf("key %d: events before the switch %v, want 1, 2, …", key, before)
				break
			}
		}
		for i := range after {
			if after[i] != int64(len(before)+i+1) {
				t.Errorf("key %d: events after the switch %v, want them to follow %d", key, after, len(before))
				break
			}
		}
		if len(before) == 0 || len(after) == 0 {
			t.Errorf("key %d: %d events before the switch, %d after; want some of each", key, len(before), len(after))
		}
	}
}

// applyIn writes evs' effects inside tx, as the handler's fenced
// transaction does: first the transaction's snapshot, then the rows.
func applyIn(ctx context.Context, tx pgx.Tx, tables Tables, evs []Event) error {
	if _, err := tx.Exec(ctx, `INSERT INTO `+tables.txs().Sanitize()+` (xid, snap) VALUES (pg_current_xact_id(), pg_current_snapshot())`); err != nil {
		return err
	}
	rows := make([][]any, len(evs))
	for i, e := range evs {
		rows[i] = []any{e.Partition, e.N, int64(0), int64(1), "w", time.Now(), e.Key, e.KeySeq}
	}
	_, err := tx.CopyFrom(ctx, tables.effects(), []string{"partition", "n", "stream_seq", "token", "worker", "published_at", "key_id", "key_seq"}, pgx.CopyFromRows(rows))
	return err
}

// ProveKeys finds each key's events applied once and in order when every
// old partition's transaction committed before the new partitions' began;
// an event applied twice, one never; and, told by PostgreSQL's own
// snapshots, a new partition's transaction that began before an old one's
// had committed, although it committed last: a reader could have seen a
// key's later events without its earlier.
func TestProveKeysFindsOrderDuplicatesAndGaps(t *testing.T) {
	ctx := t.Context()
	js, from, to, byPart := keyedStream(t)
	pg := pgtest.Start(t)
	pool, err := pgxpool.New(ctx, pg.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	keys := int64(len(ChooseKeys(1, from, to)))
	events := int64(0)
	for _, evs := range byPart {
		events += int64(len(evs))
	}
	events -= int64(from.Count) // the markers

	// The keys of the first old partition: each crosses to a child.
	moved := int64(0)
	for _, k := range ChooseKeys(1, from, to) {
		if from.Of(k) == from.First {
			moved++
		}
	}
	for _, tc := range []struct {
		name, schema string
		apply        func(tables Tables) error
		want         KeyProof
	}{{
		name: "in order", schema: "keyproof_in_order",
		apply: func(tables Tables) error {
			for p := range to.Last() + 1 { // the old partitions first
				if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return applyIn(ctx, tx, tables, byPart[p]) }); err != nil {
					return err
				}
			}
			return nil
		},
		want: KeyProof{Keys: keys, Events: events, Applied: events, Pairs: events - keys, Crossed: keys, CrossedKeys: keys},
	}, {
		name: "one twice, one never", schema: "keyproof_twice_never",
		apply: func(tables Tables) error {
			for p := range to.Last() + 1 {
				evs := byPart[p]
				switch p {
				case from.First:
					evs = append(evs, evs[0])
				case to.Last():
					evs = evs[1:]
				}
				if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return applyIn(ctx, tx, tables, evs) }); err != nil {
					return err
				}
			}
			return nil
		},
		// The missing event is the first of its partition: its key's
		// events before and after it still pair up, across the gap.
		want: KeyProof{Keys: keys, Events: events, Applied: events - 1, Duplicates: 1, Gaps: 1, Pairs: events - keys - 1, Crossed: keys, CrossedKeys: keys},
	}, {
		name: "a child before its parent committed", schema: "keyproof_child_first",
		apply: func(tables Tables) error {
			parent, err := pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer parent.Rollback(ctx) //nolint:errcheck // committed below
			if err := applyIn(ctx, parent, tables, byPart[from.First]); err != nil {
				return err
			}
			for p := from.First + 1; p <= to.Last(); p++ { // the children begin while the parent's is open
				if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return applyIn(ctx, tx, tables, byPart[p]) }); err != nil {
					return err
				}
			}
			return parent.Commit(ctx)
		},
		want: KeyProof{Keys: keys, Events: events, Applied: events, Pairs: events - keys, Crossed: keys, CrossedKeys: keys,
			OutOfOrder: moved, CrossedOutOfOrder: moved},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tables := Tables{Schema: tc.schema}
			if err := tables.Create(ctx, pool); err != nil {
				t.Fatal(err)
			}
			if err := tc.apply(tables); err != nil {
				t.Fatal(err)
			}
			h := &Handler{JS: js, Pool: pool, Tables: tables}
			got, err := h.ProveKeys(ctx, to.Last()+1)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if moved == 0 || got != want {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			if got.OK() != (want.Duplicates == 0 && want.Gaps == 0 && want.OutOfOrder == 0) {
				t.Errorf("OK() = %v for %+v", got.OK(), got)
			}
		})
	}
}

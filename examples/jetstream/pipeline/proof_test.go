package pipeline

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/harness/pgtest"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newFixture starts an embedded nats-server with the stream, publishes
// events to each of parts partitions, and makes schema's tables and an
// offsets store in a fresh PostgreSQL.
func newFixture(t *testing.T, parts int, events int64, schema string) (jetstream.JetStream, *pgxpool.Pool, *postgres.Store, Tables) {
	t.Helper()
	ctx := t.Context()
	srv, err := StartEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	nc, js, err := Connect(srv.URL(), schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if _, err := CreateStream(ctx, js); err != nil {
		t.Fatal(err)
	}
	if err := Produce(ctx, js, parts, events, 0, nil); err != nil {
		t.Fatal(err)
	}
	pg := pgtest.Start(t)
	pool, err := pgxpool.New(ctx, pg.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	tables := Tables{Schema: schema}
	if err := tables.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	store, err := postgres.Open(ctx, postgres.Config{Pool: pool, Table: tables.Offsets()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return js, pool, store, tables
}

// The proof reads the stream and the effects itself, and finds each kind
// of breach: a duplicate, a gap, an effect of an event the stream never
// had, an offset short of its partition's last event.
func TestProofFindsEveryBreach(t *testing.T) {
	ctx := t.Context()
	const parts, events = 4, 5
	js, pool, store, tables := newFixture(t, parts, events, "proof_test")
	ids := shard.Config{Shards: parts}.IDs()
	h := &Handler{JS: js, Store: store, Pool: pool, Tables: tables, Partition: map[shard.ID]int{}}
	for p, id := range ids {
		h.Partition[id] = p
	}

	// Stream sequences: round n publishes partition p as (n−1)·parts + p + 1.
	seq := func(p int, n int64) int64 { return (n-1)*parts + int64(p) + 1 }
	effects := map[int][]int64{
		0: {1, 2, 3, 4, 5},    // exactly once
		1: {1, 2, 3, 3, 4, 5}, // event 3 twice
		2: {1, 2, 4, 5},       // event 3 never
		3: {1, 2, 3, 4, 5, 9}, // an event 9 the stream never had
	}
	var rows [][]any
	for p, ns := range effects {
		for _, n := range ns {
			rows = append(rows, []any{p, n, seq(p, min(n, events)), int64(1), "w", time.Now()})
		}
	}
	if _, err := pool.CopyFrom(ctx, tables.effects(), []string{"partition", "n", "stream_seq", "token", "worker", "published_at"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}
	for p, id := range ids {
		off := seq(p, events)
		if p == 3 {
			off = seq(p, 4) // one event short
		}
		if err := store.Fence(ctx, id, 1); err != nil {
			t.Fatal(err)
		}
		if err := store.Commit(ctx, id, 1, off); err != nil {
			t.Fatal(err)
		}
	}

	proof, err := h.Prove(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ published, applied, dups, gaps, foreign int64 }{
		{5, 5, 0, 0, 0}, {5, 5, 1, 0, 0}, {5, 4, 0, 1, 0}, {5, 6, 0, 0, 1},
	}
	for p, w := range want {
		got := proof.Partitions[p]
		if got.Published != w.published || got.Applied != w.applied || got.Duplicates != w.dups || got.Gaps != w.gaps || got.Foreign != w.foreign {
			t.Errorf("partition %d: %+v, want published %d applied %d duplicates %d gaps %d foreign %d",
				p, got, w.published, w.applied, w.dups, w.gaps, w.foreign)
		}
	}
	if proof.OK() || proof.Duplicates != 1 || proof.Gaps != 1 || proof.Foreign != 1 || proof.Behind != 1 {
		t.Errorf("totals: %+v, want 1 duplicate, 1 gap, 1 foreign, 1 behind, not OK", proof)
	}
	proof.SetRefused(map[shard.ID]int64{ids[2]: 3})
	var out bytes.Buffer
	if err := proof.Print(&out, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "orders.000") || !strings.Contains(out.String(), "orders.003") || !strings.Contains(out.String(), "NO (") {
		t.Errorf("the problems-only table shows a clean partition or misses a bad one:\n%s", out.String())
	}
	if proof.Refused != 3 {
		t.Errorf("refused %d, want 3", proof.Refused)
	}

	// An effect of a partition the run does not have is named, even when a
	// partition it has is missing, so that the counts alone would balance.
	stray := [][]any{{int(parts) + 7, int64(1), int64(1), int64(1), "w", time.Now()}}
	if _, err := pool.CopyFrom(ctx, tables.effects(), []string{"partition", "n", "stream_seq", "token", "worker", "published_at"}, pgx.CopyFromRows(stray)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Prove(ctx, ids); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("[%d]", parts+7)) {
		t.Errorf("a stray partition's effects: %v, want an error naming partition %d", err, parts+7)
	}
}

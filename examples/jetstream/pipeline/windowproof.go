package pipeline

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// WindowProof compares the window rows in PostgreSQL with a recomputation
// from the stream: every window whose events were all published must be
// written exactly once, with the count and sum its events give.
type WindowProof struct {
	Expected   int64 // windows whose events were all published
	Written    int64 // window rows
	Duplicates int64 // rows beyond one per window
	Missing    int64 // expected windows without a row
	Wrong      int64 // windows whose row differs from the recomputation (or that were never closed)
}

// OK reports whether the rows are the recomputation exactly.
func (p WindowProof) OK() bool { return p.Duplicates == 0 && p.Missing == 0 && p.Wrong == 0 }

// ProveWindows reads each partition's events back from the stream,
// recomputes its windows of size events, and compares them with the rows.
func (h *Handler) ProveWindows(ctx context.Context, partitions int, size int64) (WindowProof, error) {
	type key struct{ p, w int64 }
	type agg struct{ count, sum int64 }
	want := map[key]agg{}
	st, err := h.JS.Stream(ctx, Stream)
	if err != nil {
		return WindowProof{}, fmt.Errorf("pipeline: window proof: %w", err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(SubjectPrefix+">"))
	if err != nil {
		return WindowProof{}, fmt.Errorf("pipeline: window proof: %w", err)
	}
	for p := range partitions {
		published := int64(info.State.Subjects[Subject(p)])
		if published == 0 {
			continue
		}
		cons, err := h.JS.OrderedConsumer(ctx, Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{Subject(p)}})
		if err != nil {
			return WindowProof{}, fmt.Errorf("pipeline: window proof: reading %s: %w", Subject(p), err)
		}
		it, err := cons.Messages()
		if err != nil {
			return WindowProof{}, err
		}
		for range published {
			m, err := it.Next(jetstream.NextContext(ctx))
			if err != nil {
				it.Stop()
				return WindowProof{}, fmt.Errorf("pipeline: window proof: reading %s: %w", Subject(p), err)
			}
			ev, err := decode(m.Data())
			if err != nil {
				it.Stop()
				return WindowProof{}, err
			}
			if ev.N <= published/size*size { // in a window whose events were all published
				k := key{int64(p), (ev.N - 1) / size}
				a := want[k]
				a.count++
				a.sum += Value(ev.N)
				want[k] = a
			}
		}
		it.Stop()
	}
	var out WindowProof
	out.Expected = int64(len(want))
	rows, err := h.Pool.Query(ctx, `SELECT partition, "window", count, sum FROM `+h.Tables.windows().Sanitize())
	if err != nil {
		return out, fmt.Errorf("pipeline: window proof: reading the windows: %w", err)
	}
	defer rows.Close()
	seen := map[key]bool{}
	for rows.Next() {
		var k key
		var got agg
		if err := rows.Scan(&k.p, &k.w, &got.count, &got.sum); err != nil {
			return out, err
		}
		out.Written++
		if seen[k] {
			out.Duplicates++
			continue
		}
		seen[k] = true
		if w, ok := want[k]; !ok || w != got {
			out.Wrong++
		}
	}
	if err := rows.Err(); err != nil {
		return out, err
	}
	for k := range want {
		if !seen[k] {
			out.Missing++
		}
	}
	return out, nil
}

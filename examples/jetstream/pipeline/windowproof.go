package pipeline

import (
	"context"
	"fmt"
	"slices"

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
	// Wrong counts windows whose row differs from the recomputation, or
	// that no window should have, or that was not written with the
	// effect of the event that closed it: the row's last_seq and token
	// must be that effect's stream_seq and token (one fenced transaction).
	Wrong int64
}

// OK reports whether the rows are the recomputation exactly.
func (p WindowProof) OK() bool { return p.Duplicates == 0 && p.Missing == 0 && p.Wrong == 0 }

// ProveWindows reads each partition's events back from the stream,
// recomputes its windows of size events (markers aside), and compares
// them with the rows.
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
		var events []Event
		err := h.read(ctx, p, int64(info.State.Subjects[Subject(p)]), func(ev Event, _ uint64) {
			if !ev.Marker {
				events = append(events, ev)
			}
		})
		if err != nil {
			return WindowProof{}, fmt.Errorf("pipeline: window proof: %w", err)
		}
		full := int64(len(events)) / size * size // the events in windows whose events were all published
		for _, ev := range events {
			if ev.N <= full {
				k := key{int64(p), (ev.N - 1) / size}
				a := want[k]
				a.count++
				a.sum += Value(ev.N)
				want[k] = a
			}
		}
	}
	var out WindowProof
	out.Expected = int64(len(want))
	// The effects of the events that close windows: a window's row must
	// carry one's stream sequence and token.
	type effect struct{ seq, token int64 }
	closing := map[key][]effect{}
	erows, err := h.Pool.Query(ctx, `SELECT partition, n, stream_seq, token FROM `+h.Tables.effects().Sanitize()+` WHERE n % $1 = 0`, size)
	if err != nil {
		return out, fmt.Errorf("pipeline: window proof: reading the effects: %w", err)
	}
	for erows.Next() {
		var k key
		var n int64
		var e effect
		if err := erows.Scan(&k.p, &n, &e.seq, &e.token); err != nil {
			erows.Close()
			return out, err
		}
		k.w = n/size - 1
		closing[k] = append(closing[k], e)
	}
	if err := erows.Err(); err != nil {
		return out, fmt.Errorf("pipeline: window proof: reading the effects: %w", err)
	}
	rows, err := h.Pool.Query(ctx, `SELECT partition, "window", count, sum, last_seq, token FROM `+h.Tables.windows().Sanitize())
	if err != nil {
		return out, fmt.Errorf("pipeline: window proof: reading the windows: %w", err)
	}
	defer rows.Close()
	// right: whether one of a window's rows is the recomputation, written
	// with its closing effect (the others are duplicates either way).
	right := map[key]bool{}
	for rows.Next() {
		var k key
		var got agg
		var wrote effect
		if err := rows.Scan(&k.p, &k.w, &got.count, &got.sum, &wrote.seq, &wrote.token); err != nil {
			return out, err
		}
		out.Written++
		ok, seen := right[k]
		if seen {
			out.Duplicates++
		}
		w, expected := want[k]
		right[k] = ok || expected && w == got && slices.Contains(closing[k], wrote)
	}
	if err := rows.Err(); err != nil {
		return out, err
	}
	for _, ok := range right {
		if !ok {
			out.Wrong++
		}
	}
	for k := range want {
		if _, written := right[k]; !written {
			out.Missing++
		}
	}
	return out, nil
}

// read calls fn with each of partition p's n messages (all it has, as the
// stream's info counted them), in order, with its stream sequence.
func (h *Handler) read(ctx context.Context, p int, n int64, fn func(ev Event, seq uint64)) error {
	if n == 0 {
		return nil
	}
	cons, err := h.JS.OrderedConsumer(ctx, Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{Subject(p)}, InactiveThreshold: consumerIdle})
	if err != nil {
		return fmt.Errorf("reading %s: %w", Subject(p), err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("reading %s: %w", Subject(p), err)
	}
	defer it.Stop()
	for range n {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return fmt.Errorf("reading %s: %w", Subject(p), err)
		}
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		ev, err := decode(m.Data())
		if err != nil {
			return err
		}
		fn(ev, md.Sequence.Stream)
	}
	return nil
}

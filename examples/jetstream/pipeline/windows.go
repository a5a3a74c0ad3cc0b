package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// Windows is a handler's state: per partition, tumbling windows of Size
// events (by N, markers aside), each aggregated as its count and the sum
// of Value(N). A partition closed at its marker leaves its last window
// open for good; a new partition of a reshard starts its own windows.
// A window's row is written when its last event is applied, in the same
// fenced transaction as the events' effects and the offset, so a window
// is written exactly once when its events are. The open window's partial
// aggregate lives only in memory: a handler that starts cold rebuilds it
// from the last window row and the stream (ReplayCost per event replayed:
// what a real aggregation spends per event, so that the rebuild takes
// seconds), and a standby (Stateful's Standby side) keeps it warm on
// another worker, following the committed offset, so that a promotion or
// a warm move starts from it at once.
type Windows struct {
	Size       int64
	ReplayCost time.Duration

	// Cold counts handler starts that rebuilt the state; Warm those that
	// took a standby's state, caught up to the committed offset.
	Cold, Warm atomic.Int64

	mu   sync.Mutex
	left map[shard.ID]windowState // the standbys' states, for a promotion
}

// Value is what an event adds to its window's sum.
func Value(n int64) int64 { return n * 7919 % 1000 }

// windowState is one partition's state: the events folded up to stream
// sequence applied, and the open window's aggregate.
type windowState struct {
	applied    int64 // the stream sequence of the last event folded (0: none)
	open       int64 // the open window's index: events (open·Size, (open+1)·Size]
	count, sum int64
}

// windowRow is a closed window, as written.
type windowRow struct{ window, count, sum, lastSeq int64 }

// fold applies msgs, in order, to st and returns the state after them and
// the windows they closed. A marker is in no window: it only moves
// applied.
func (w *Windows) fold(st windowState, msgs []message) (windowState, []windowRow) {
	var closed []windowRow
	for _, m := range msgs {
		st.applied = int64(m.seq)
		if m.Marker {
			continue
		}
		st.count++
		st.sum += Value(m.N)
		if m.N%w.Size == 0 {
			closed = append(closed, windowRow{window: (m.N - 1) / w.Size, count: st.count, sum: st.sum, lastSeq: st.applied})
			st.open, st.count, st.sum = m.N/w.Size, 0, 0
		}
	}
	return st, closed
}

// start is the state a handler of claim c on partition p starts from,
// the shard's committed offset being from: its standby's, brought up to
// from (each event at ReplayCost, as in a rebuild: usually none or a few),
// when this worker ran one until the claim (c.Warm), else rebuilt.
func (w *Windows) start(ctx context.Context, h *Handler, c *worker.Claim, p int, from int64) (windowState, error) {
	w.mu.Lock()
	st, ok := w.left[c.Shard]
	delete(w.left, c.Shard)
	w.mu.Unlock()
	if ok && c.Warm != nil && st.applied <= from {
		st, err := w.replay(ctx, h, p, st, from, true)
		if err == nil {
			w.Warm.Add(1)
		}
		return st, err
	}
	w.Cold.Add(1)
	return w.rebuild(ctx, h, p, from)
}

// rebuild makes partition p's state at offset from: the last window
// written at or before it, then the stream's events after that window up
// to from, each at ReplayCost.
func (w *Windows) rebuild(ctx context.Context, h *Handler, p int, from int64) (windowState, error) {
	var st windowState
	if from == 0 {
		return st, nil
	}
	var last int64
	err := h.Store.Pool().QueryRow(ctx, `SELECT "window", last_seq FROM `+h.Tables.windows().Sanitize()+
		` WHERE partition = $1 AND last_seq <= $2 ORDER BY "window" DESC LIMIT 1`, p, from).Scan(&last, &st.applied)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return st, fmt.Errorf("pipeline: the last window of %s: %w", Subject(p), err)
	default:
		st.open = last + 1
	}
	return w.replay(ctx, h, p, st, from, true)
}

// replay folds partition p's events after st.applied up to stream
// sequence to into st, each at ReplayCost when costly.
func (w *Windows) replay(ctx context.Context, h *Handler, p int, st windowState, to int64, costly bool) (windowState, error) {
	if st.applied >= to {
		return st, nil
	}
	cons, err := h.JS.OrderedConsumer(ctx, Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{Subject(p)},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy, OptStartSeq: uint64(st.applied) + 1,
		InactiveThreshold: consumerIdle,
	})
	if err != nil {
		return st, fmt.Errorf("pipeline: replaying %s from %d: %w", Subject(p), st.applied+1, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return st, fmt.Errorf("pipeline: replaying %s: %w", Subject(p), err)
	}
	defer it.Stop()
	for st.applied < to {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return st, fmt.Errorf("pipeline: replaying %s up to %d: %w", Subject(p), to, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return st, err
		}
		ev, err := decode(m.Data())
		if err != nil {
			return st, err
		}
		if costly && w.ReplayCost > 0 && !Sleep(ctx, w.ReplayCost) {
			return st, context.Cause(ctx)
		}
		st, _ = w.fold(st, []message{{Event: ev, seq: md.Sequence.Stream}})
	}
	return st, nil
}

// standby keeps partition p's state at the shard's committed offset: it
// rebuilds it once, then folds what the owner commits, and leaves it for
// a promotion; it reports itself caught up when it is at the offset.
func (w *Windows) standby(ctx context.Context, h *Handler, sc *worker.StandbyClaim, p int) error {
	var st *windowState
	for {
		if cp, err := sc.Committed(ctx); err == nil {
			var next windowState
			if st == nil || st.applied > cp.Offset {
				next, err = w.rebuild(ctx, h, p, cp.Offset)
			} else {
				next, err = w.replay(ctx, h, p, *st, cp.Offset, false)
			}
			if err == nil {
				st = &next
				w.mu.Lock()
				if w.left == nil {
					w.left = map[shard.ID]windowState{}
				}
				w.left[sc.Shard] = next
				w.mu.Unlock()
				sc.Report(next.applied, next.applied == cp.Offset)
			}
		}
		if !Sleep(ctx, 100*time.Millisecond) {
			if errors.Is(context.Cause(ctx), worker.ErrStandbyDropped) {
				w.mu.Lock()
				delete(w.left, sc.Shard)
				w.mu.Unlock()
			}
			return nil
		}
	}
}

// Stateful is a Handler with Windows and a standby side: the worker runs
// its Standby for the shards it is to take or back up.
type Stateful struct{ *Handler }

// Standby keeps the shard's windows warm (Windows.standby).
func (s Stateful) Standby(ctx context.Context, sc *worker.StandbyClaim) error {
	p, ok := s.Partition[sc.Shard]
	if !ok {
		return fmt.Errorf("pipeline: shard %q has no partition", sc.Shard)
	}
	if s.Windows == nil {
		return errors.New("pipeline: a Stateful handler needs Windows")
	}
	return s.Windows.standby(ctx, s.Handler, sc, p)
}

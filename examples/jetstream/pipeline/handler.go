package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// Defaults of Handler's zero values.
const (
	DefaultBatch  = 64
	DefaultLinger = 2 * time.Millisecond
	// txTimeout bounds one batch's transaction. The transaction is not
	// cancelled with the claim: a batch begun is committed or refused
	// whole, and the fence (not the handler's context) decides which.
	txTimeout = 30 * time.Second
)

// Hooks let a story stop a handler where a real process may stop: Before
// runs after a batch is read and before its transaction begins, InTx
// inside the transaction after the fence was taken. Each returns once the
// process runs again, saying whether it was paused meanwhile, or that it
// died: the handler then returns without writing.
type Hooks struct {
	Before func(c *worker.Claim) Resumed
	InTx   func(c *worker.Claim) Resumed
}

// Resumed is how a process came back from a hook.
type Resumed int

// The ways back from a hook.
const (
	Ran    Resumed = iota // never stopped
	Thawed                // was paused, runs again
	Died                  // will never run again
)

// Stats counts what the handlers of one process (or one run) did; safe for
// concurrent use.
type Stats struct {
	Batches, Events atomic.Int64 // committed
	// Stale counts transactions refused by the fence: a newer owner had
	// fenced the shard before this one's fence ran (offsets.ErrStaleToken).
	Stale atomic.Int64
	// Ended counts transactions of a paused owner that the server ended
	// (Config.MaxHold) while they held the shard's row, so the newer owner
	// could fence: they never commit.
	Ended atomic.Int64
	// Failed counts other failed transactions (retried by a new handler).
	Failed atomic.Int64
	// Closed counts partitions closed at their marker for a reshard
	// (Claim.CloseWith committed); ChildStarts the starts of a child's
	// handler, and ShortParents those among them that found a parent's
	// final checkpoint (Claim.Parents) short of its marker: a child that
	// starts before its parents' ends.
	Closed, ChildStarts, ShortParents atomic.Int64

	mu      sync.Mutex
	refused map[shard.ID]int64 // Stale + Ended, by shard
	failure error              // the first of Failed
}

// FirstFailure is the first transaction counted in Failed, or nil.
func (s *Stats) FirstFailure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failure
}

// Refused returns the transactions of superseded owners that did not
// commit (refused by the fence, or ended by the server), by shard.
func (s *Stats) Refused() map[shard.ID]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.refused)
}

func (s *Stats) refuse(id shard.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused == nil {
		s.refused = map[shard.ID]int64{}
	}
	s.refused[id]++
}

// Handler applies a partition's events to PostgreSQL: a worker.Handler.
// One Handler serves every shard of a worker; its fields are read, never
// written, once the worker runs (Stats and Committed must be safe for
// concurrent use).
type Handler struct {
	JS jetstream.JetStream
	// Store holds the offsets and runs FencedTx; it must be the worker's
	// Config.Offsets, so the fence the worker takes at each claim and the
	// one each transaction takes are on the same rows.
	Store *postgres.Store
	// Pool runs the unfenced pipeline's transactions and Prove's reads.
	Pool   *pgxpool.Pool
	Tables Tables
	// Partition maps each shard to its partition.
	Partition map[shard.ID]int
	// Unfenced applies each batch in a plain transaction, with the offset
	// upserted without its token: the same work minus the fence, for
	// shardbench to measure what the fence costs. Never in production: a
	// paused owner's batch would commit over a newer owner's. An unfenced
	// handler never closes its partition (it has no fenced commit to close
	// with): it does not reshard.
	Unfenced bool
	// Batch is the most events applied in one transaction (DefaultBatch);
	// Linger how long a batch waits for one more event (DefaultLinger).
	Batch  int
	Linger time.Duration
	Hooks  Hooks
	Stats  *Stats
	// Windows, when set, is the handler's state: windowed aggregates
	// written with each batch (fenced mode only; see Stateful).
	Windows *Windows
	// Committed, if set, is called after each committed batch with its
	// events and the time the commit returned.
	Committed func(events []Event, at time.Time)
}

// message is one event as read, with its stream sequence.
type message struct {
	Event
	seq uint64
}

// Process consumes the claimed partition from the committed offset + 1 and
// applies it batch by batch until the claim ends, or, once the partition's
// marker is applied, until it is told to close the partition (a reshard:
// Claim.Closing), which it does at the marker.
func (h *Handler) Process(ctx context.Context, c *worker.Claim) error {
	p, ok := h.Partition[c.Shard]
	if !ok {
		return fmt.Errorf("pipeline: shard %q has no partition", c.Shard)
	}
	// The committed offset now, not c.Start: a handler restarted on the
	// same claim after a failed batch resumes after its own last commit.
	from, err := h.position(ctx, c.Shard)
	if err != nil {
		return err
	}
	if len(c.Parents) > 0 {
		if err := h.checkParents(ctx, c); err != nil {
			return err
		}
	}
	// Applied up to its marker already (by an owner that was then killed,
	// or whose close did not reach the fleet): nothing more will come.
	ended, err := h.atMarker(ctx, p, from)
	if err != nil {
		return err
	}
	if ended {
		return h.closeAt(ctx, c, from)
	}
	var state windowState
	if h.Windows != nil {
		if state, err = h.Windows.start(ctx, h, c, p, from); err != nil {
			if ctx.Err() != nil {
				return nil // revoked or lost while restoring
			}
			return err
		}
	}
	cons, err := h.JS.OrderedConsumer(ctx, Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{Subject(p)},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy, OptStartSeq: uint64(from) + 1,
		InactiveThreshold: consumerIdle,
	})
	if err != nil {
		return fmt.Errorf("pipeline: consumer of %s from sequence %d: %w", Subject(p), from+1, err)
	}
	batch := h.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(2 * batch))
	if err != nil {
		return fmt.Errorf("pipeline: reading %s: %w", Subject(p), err)
	}
	defer it.Stop()
	for {
		msgs, err := h.collect(ctx, it, batch)
		if err != nil {
			if ctx.Err() != nil {
				return nil // revoked or lost: the next owner resumes from the committed offset
			}
			return fmt.Errorf("pipeline: reading %s: %w", Subject(p), err)
		}
		if h.Hooks.Before != nil && h.Hooks.Before(c) == Died {
			return nil
		}
		var closed []windowRow
		next := state
		if h.Windows != nil {
			next, closed = h.Windows.fold(state, msgs)
		}
		if err := h.apply(ctx, c, msgs, closed); err != nil {
			return err
		}
		state = next
		if last := msgs[len(msgs)-1]; last.Marker && !h.Unfenced {
			return h.closeAt(ctx, c, int64(last.seq))
		}
	}
}

// position is the shard's committed offset: the stream sequence of the
// last event applied (0: none).
func (h *Handler) position(ctx context.Context, s shard.ID) (int64, error) {
	if !h.Unfenced {
		cp, err := h.Store.Load(ctx, s)
		if err != nil {
			return 0, fmt.Errorf("pipeline: loading the offset of %s: %w", s, err)
		}
		return cp.Offset, nil
	}
	var off int64
	err := h.Pool.QueryRow(ctx, `SELECT "offset" FROM `+h.Tables.plainOffsets()+` WHERE shard = $1`, string(s)).Scan(&off)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return off, err
}

// collect waits for one message, then takes what else arrives within the
// linger, up to max.
func (h *Handler) collect(ctx context.Context, it jetstream.MessagesContext, max int) ([]message, error) {
	linger := h.Linger
	if linger <= 0 {
		linger = DefaultLinger
	}
	var out []message
	for len(out) < max {
		var m jetstream.Msg
		var err error
		if len(out) == 0 {
			m, err = it.Next(jetstream.NextContext(ctx))
		} else {
			m, err = it.Next(jetstream.NextMaxWait(linger))
		}
		if err != nil {
			if len(out) > 0 && ctx.Err() == nil {
				return out, nil // the linger ran out: apply what there is
			}
			return nil, err
		}
		md, err := m.Metadata()
		if err != nil {
			return nil, err
		}
		ev, err := decode(m.Data())
		if err != nil {
			return nil, err
		}
		out = append(out, message{Event: ev, seq: md.Sequence.Stream})
		if ev.Marker {
			break // the partition's end: a batch ends with it
		}
	}
	return out, nil
}

// apply writes the batch's effects and its last sequence as the shard's
// offset in one transaction.
func (h *Handler) apply(ctx context.Context, c *worker.Claim, msgs []message, closed []windowRow) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), txTimeout)
	defer cancel()
	last := int64(msgs[len(msgs)-1].seq)
	rows := make([][]any, len(msgs))
	keyed := false
	for i, m := range msgs {
		rows[i] = []any{m.Partition, m.N, int64(m.seq), int64(c.Token), c.Worker, time.Unix(0, m.PublishedNs), m.Key, m.KeySeq}
		keyed = keyed || m.Key != 0
	}
	write := func(tx pgx.Tx) error {
		if keyed { // first: the snapshot of a statement before any effect
			if _, err := tx.Exec(ctx, `INSERT INTO `+h.Tables.txs().Sanitize()+` (xid, snap) VALUES (pg_current_xact_id(), pg_current_snapshot())`); err != nil {
				return err
			}
		}
		if _, err := tx.CopyFrom(ctx, h.Tables.effects(), []string{"partition", "n", "stream_seq", "token", "worker", "published_at", "key_id", "key_seq"}, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		for _, w := range closed {
			if _, err := tx.Exec(ctx, `INSERT INTO `+h.Tables.windows().Sanitize()+` (partition, "window", count, sum, last_seq, token, worker) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				msgs[0].Partition, w.window, w.count, w.sum, w.lastSeq, int64(c.Token), c.Worker); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	if h.Unfenced {
		err = pgx.BeginFunc(ctx, h.Pool, func(tx pgx.Tx) error {
			if err := write(tx); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO `+h.Tables.plainOffsets()+` (shard, "offset") VALUES ($1, $2)
ON CONFLICT (shard) DO UPDATE SET "offset" = EXCLUDED."offset"`, string(c.Shard), last)
			return err
		})
	} else {
		paused := false
		fenced := func(hooked bool) error {
			return h.Store.FencedTx(ctx, c.Shard, c.Token, func(tx pgx.Tx) error {
				if hooked && h.Hooks.InTx != nil {
					switch h.Hooks.InTx(c) {
					case Died:
						return errDead
					case Thawed:
						paused = true
					}
				}
				if err := write(tx); err != nil {
					return err
				}
				return h.Store.CommitTx(ctx, tx, c.Shard, c.Token, last)
			})
		}
		err = fenced(true)
		// A commit whose outcome is unknown may have landed: trying the
		// batch again could apply it twice. The handler returns instead,
		// and its restart reads the committed offset.
		if err != nil && !errors.Is(err, errDead) && !errors.Is(err, offsets.ErrStaleToken) && !errors.Is(err, offsets.ErrOutcomeUnknown) && paused {
			// Paused with its fence taken for longer than MaxHold: the
			// server ended the session (25P03) and closed the connection,
			// which the next statement finds one way or the other.
			h.count(func(s *Stats) { s.Ended.Add(1); s.refuse(c.Shard) })
			// A process that wakes to a broken connection tries its batch
			// again, still believing it owns the shard: that is the stale
			// write the fence is for, and it must be refused now that a
			// newer owner has fenced (or, if none has yet, it commits in
			// order and the next owner starts after it). Left to the
			// worker's restart, the retry raced the worker's noticing the
			// lost lease, and a run could end with no stale write tried.
			if err = fenced(false); err == nil || errors.Is(err, offsets.ErrStaleToken) {
				return h.settle(c, msgs, err)
			}
			return fmt.Errorf("pipeline: the transaction of %s (token %d) was ended by the server while its owner was paused: %w", c.Shard, c.Token, err)
		}
	}
	return h.settle(c, msgs, err)
}

// settle counts the outcome err of applying msgs for c (nil: committed)
// and returns what the handler should.
func (h *Handler) settle(c *worker.Claim, msgs []message, err error) error {
	at := time.Now()
	switch {
	case errors.Is(err, errDead):
		return nil
	case errors.Is(err, offsets.ErrStaleToken):
		h.count(func(s *Stats) { s.Stale.Add(1); s.refuse(c.Shard) })
		return err // a newer owner has the shard: stop acting for it
	case err != nil:
		err = fmt.Errorf("pipeline: applying %d events of %s (token %d): %w", len(msgs), c.Shard, c.Token, err)
		h.count(func(s *Stats) {
			s.Failed.Add(1)
			s.mu.Lock()
			if s.failure == nil {
				s.failure = err
			}
			s.mu.Unlock()
		})
		return err
	}
	h.count(func(s *Stats) { s.Batches.Add(1); s.Events.Add(int64(len(msgs))) })
	if h.Committed != nil {
		evs := make([]Event, len(msgs))
		for i, m := range msgs {
			evs[i] = m.Event
		}
		h.Committed(evs, at)
	}
	return nil
}

// errDead: the process died inside the transaction; nothing is written.
var errDead = errors.New("pipeline: the process died")

func (h *Handler) count(f func(*Stats)) {
	if h.Stats != nil {
		f(h.Stats)
	}
}

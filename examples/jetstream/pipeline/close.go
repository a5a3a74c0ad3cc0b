package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/worker"
)

// A reshard, as the handler sees it. The producer switches layouts with a
// marker at the end of every partition it leaves (Keyed); the fleet then
// reshards, and the owner of each old partition (a parent) is told to
// close it (Claim.Closing). The handler applies its partition up to the
// marker, like any event, waits to be told, and closes the partition at
// the marker: the end committed again in a fenced transaction, through
// Claim.CloseWith. Told before it got there, it reads on to the marker
// first. A handler that starts on a partition whose committed offset is
// its marker (its last owner was killed after applying it, or before its
// close reached the fleet) is at the end already. A new partition's
// handler (a child) starts once its parents closed, from its own offset;
// it checks that every parent's final checkpoint (Claim.Parents) is that
// parent's marker, and counts those that are not (Stats.ShortParents).

// atMarker reports whether the message at stream sequence seq, partition
// p's committed offset, is p's marker: its end (seq 0: nothing applied).
func (h *Handler) atMarker(ctx context.Context, p int, seq int64) (bool, error) {
	if seq == 0 || h.Unfenced {
		return false, nil
	}
	st, err := h.JS.Stream(ctx, Stream)
	if err != nil {
		return false, fmt.Errorf("pipeline: stream %s: %w", Stream, err)
	}
	m, err := st.GetMsg(ctx, uint64(seq))
	if err != nil {
		return false, fmt.Errorf("pipeline: the message at %s's offset %d: %w", Subject(p), seq, err)
	}
	ev, err := decode(m.Data)
	if err != nil {
		return false, err
	}
	if ev.Partition != p || m.Subject != Subject(p) {
		return false, fmt.Errorf("pipeline: %s's offset %d is a message of %s", Subject(p), seq, m.Subject)
	}
	return ev.Marker, nil
}

// closeAt waits until c's shard is to close, then closes it at end, its
// marker's stream sequence, committed again with the claim's token in a
// fenced transaction (Claim.CloseWith). It returns nil when the claim
// ends first or the process died; the shard's next owner closes it.
func (h *Handler) closeAt(ctx context.Context, c *worker.Claim, end int64) error {
	select {
	case <-c.Closing():
	case <-ctx.Done():
		return nil
	}
	if h.Hooks.Before != nil && h.Hooks.Before(c) == Died {
		return nil
	}
	err := c.CloseWith(ctx, func(ctx context.Context) error {
		return h.Store.FencedTx(ctx, c.Shard, c.Token, func(tx pgx.Tx) error {
			if h.Hooks.InTx != nil && h.Hooks.InTx(c) == Died {
				return errDead
			}
			return h.Store.CommitTx(ctx, tx, c.Shard, c.Token, end)
		})
	})
	switch {
	case err == nil:
		h.count(func(s *Stats) { s.Closed.Add(1) })
		return nil
	case errors.Is(err, errDead), errors.Is(err, worker.ErrLost):
		return nil
	case errors.Is(err, offsets.ErrStaleToken):
		h.count(func(s *Stats) { s.Stale.Add(1); s.refuse(c.Shard) })
		return err
	}
	return fmt.Errorf("pipeline: closing %s at its marker (sequence %d, token %d): %w", c.Shard, end, c.Token, err)
}

// checkParents counts a child's start, and whether one of its parents'
// final checkpoints is short of that parent's marker.
func (h *Handler) checkParents(ctx context.Context, c *worker.Claim) error {
	st, err := h.JS.Stream(ctx, Stream)
	if err != nil {
		return fmt.Errorf("pipeline: stream %s: %w", Stream, err)
	}
	short := false
	for id, cp := range c.Parents {
		p, ok := h.Partition[id]
		if !ok {
			return fmt.Errorf("pipeline: %s's parent %s has no partition", c.Shard, id)
		}
		end, err := lastMarker(ctx, st, p)
		if err != nil {
			return err
		}
		short = short || end == 0 || cp.Offset != end
	}
	h.count(func(s *Stats) {
		s.ChildStarts.Add(1)
		if short {
			s.ShortParents.Add(1)
		}
	})
	return nil
}

// lastMarker is the stream sequence of partition p's marker, 0 when its
// last message is no marker (or it has none).
func lastMarker(ctx context.Context, st jetstream.Stream, p int) (int64, error) {
	m, err := st.GetLastMsgForSubject(ctx, Subject(p))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pipeline: the last message of %s: %w", Subject(p), err)
	}
	ev, err := decode(m.Data)
	if err != nil || !ev.Marker {
		return 0, err
	}
	return int64(m.Sequence), nil
}

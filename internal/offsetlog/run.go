package offsetlog

import (
	"fmt"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Phases of a handler run's lines, beside a call's "call" and "return".
const (
	PhaseStart  = "start"  // the handler began (after the fence and load)
	PhaseEffect = "effect" // the handler checked its claim and is about to act
	PhaseEnd    = "end"    // the handler returned
)

// Run records one run of a shard handler (one Process call) in the same
// file as the store's calls, so the checker can tell when each process
// acted as a shard's owner, not only when it committed. A nil *Run (from
// a nil *Store: no history is kept) records nothing and never fails.
type Run struct {
	s  *Store
	id string
	sh shard.ID
	t  shard.Token
}

// StartRun writes the start line of a run of the handler of shard id with
// token t, which began at at: as for Effect, the time read just before the
// caller checked that its claim may still act, so that a handler that
// begins late (after restoring state, or on waking from a pause) records
// a start its claim allowed, or does not start. It fails when the line
// cannot be written: the handler must not run unrecorded, or its effects
// would have no interval. On a nil *Store it returns nil, nil.
func (s *Store) StartRun(id shard.ID, t shard.Token, at time.Time) (*Run, error) {
	if s == nil {
		return nil, nil
	}
	r := &Run{s: s, id: fmt.Sprintf("%s/%d", s.process, s.seq.Add(1)), sh: id, t: t}
	err := s.write(line{ID: r.id, Phase: PhaseStart, Worker: s.worker, Shard: id, Token: t, At: at.UnixNano()})
	if err != nil {
		return nil, fmt.Errorf("offsetlog: recording the start of %s's handler (token %d): %w", id, t, err)
	}
	return r, nil
}

// Effect records that the handler is about to act (here: commit offset).
// at is when the caller checked that its claim may still act (read just
// before that check, so the claim's authority held at at by its own
// clock); the act follows the line. An error means the line was not
// written, and the caller must not act: the history never misses an
// effect.
func (r *Run) Effect(at time.Time, offset int64) error {
	if r == nil {
		return nil
	}
	if err := r.s.write(line{ID: r.id, Phase: PhaseEffect, Offset: offset, At: at.UnixNano()}); err != nil {
		return fmt.Errorf("offsetlog: recording an effect of %s's handler (token %d, offset %d): %w", r.sh, r.t, offset, err)
	}
	return nil
}

// End records that the handler returned, at the current time. Best
// effort: a run without an end line reads as one that never ended
// (Interval.End), which a checker must treat as running until its process
// died.
func (r *Run) End() {
	if r == nil {
		return
	}
	_ = r.s.write(line{ID: r.id, Phase: PhaseEnd, At: time.Now().UnixNano()})
}

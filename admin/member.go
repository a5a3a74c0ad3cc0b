package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/shard"
)

// memberEdit is one operator's change to a live worker's member key:
// Drain, Undrain, Cordon and Uncordon are each one.
type memberEdit struct {
	// what names the state for a dead worker's refusal ("drain").
	what string
	// done reports whether the worker is already in the state asked for.
	done func(w fleetview.Worker) bool
	// refuse, if set, is the edit's own rule, checked on a live worker
	// not yet in the state.
	refuse func(f fleetview.Fleet) error
	// apply changes the member key's value.
	apply func(m *shard.Member)
}

// editMember writes e into a live worker's member key with the worker's
// own session (the coordinator's Join updates the value of a key its
// session holds). A session that ends between the listing and the write
// (the worker rejoined) is read again, twice at most. It returns the
// worker as the call's listing showed it, and whether it wrote.
func (o Operator) editMember(ctx context.Context, id string, e memberEdit) (fleetview.Fleet, fleetview.Worker, bool, error) {
	for attempt := 0; ; attempt++ {
		f, s, err := o.view(ctx)
		if err != nil {
			return f, fleetview.Worker{}, false, err
		}
		w, ok := f.Worker(id)
		if !ok {
			return f, w, false, fmt.Errorf("no worker %q in fleet %s (workers: %s): %w", id, o.Name, list(f.WorkerIDs()), ErrUnknownWorker)
		}
		if !w.Live() {
			return f, w, false, fmt.Errorf("worker %q is dead (its member key has no session): it owns nothing and its shards were already taken over; there is nothing to %s: %w", id, e.what, ErrWorkerDead)
		}
		if e.done(w) {
			return f, w, false, nil
		}
		if e.refuse != nil {
			if err := e.refuse(f); err != nil {
				return f, w, false, err
			}
		}
		ms, _ := s.Member(id)
		m := ms.Member
		e.apply(&m)
		err = o.Coordinator.Members().Join(ctx, ms.Session, m)
		switch {
		case err == nil:
			return f, w, true, nil
		case errors.Is(err, shard.ErrSessionInvalid) && attempt < 2:
			continue
		case errors.Is(err, shard.ErrSessionInvalid), errors.Is(err, shard.ErrMemberExists):
			return f, w, false, fmt.Errorf("worker %q keeps changing sessions (restarting?); try again: %w: %w", id, ErrWorkerRestarting, err)
		default:
			return f, w, false, fmt.Errorf("%w: member key of %s: %w", ErrWrite, id, err)
		}
	}
}

package admin

import (
	"context"
	"fmt"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/shard"
)

// Drain is a worker's drain as Drain or Undrain left it.
type Drain struct {
	Worker  string
	Session shard.SessionID // the session whose member key was written
	// Shards are the shards the worker owned when the call read the
	// fleet, in ID order: what FollowDrain waits to see handed off.
	Shards []shard.ID
	// Changed is false when the worker was already in the state asked
	// for, and nothing was written.
	Changed bool
}

// DrainProgress is how far a drain has come.
type DrainProgress struct {
	Worker string
	// Left is how many shards the worker still owns.
	Left int
	// Moved is how many of the Total shards it owned when the drain was
	// set are now owned by another live worker.
	Moved, Total int
}

// Done reports whether the worker owns nothing and every shard it owned
// has a new owner.
func (p DrainProgress) Done() bool { return p.Left == 0 && p.Moved == p.Total }

// Drain asks a live worker to hand off all of its shards: it sets
// Draining on the worker's member key, rewriting the key under the
// worker's own session (the coordinator's Join updates the value of a key
// its session holds), so the assignor gives it nothing and it releases
// what it owns as the fleet's move budget allows. The worker stays a live
// member and keeps the drain if it rejoins.
//
// It refuses a worker with no member key (ErrUnknownWorker), one whose key
// has no session (ErrWorkerDead: it owns nothing), and the last live worker
// not draining (ErrLastWorker: the assignor ignores drains when every
// worker drains, so its shards would have nowhere to go), nor one whose
// drain would leave only cordoned or draining workers to take its shards
// (ErrLastWorker too: a cordoned worker is given nothing new). A worker already
// draining is not written again (Changed false).
func (o Operator) Drain(ctx context.Context, worker string) (Drain, error) {
	return o.setDraining(ctx, worker, true)
}

// Undrain withdraws a drain: the worker takes its share of shards again
// within a few assignor turns. It refuses unknown and dead workers as
// Drain does; a worker not draining is not written (Changed false).
func (o Operator) Undrain(ctx context.Context, worker string) (Drain, error) {
	return o.setDraining(ctx, worker, false)
}

// setDraining writes Draining = on into a live worker's member key.
func (o Operator) setDraining(ctx context.Context, id string, on bool) (Drain, error) {
	f, w, changed, err := o.editMember(ctx, id, memberEdit{
		what: "drain",
		done: func(w fleetview.Worker) bool { return w.Draining == on },
		refuse: func(f fleetview.Fleet) error {
			switch {
			case !on:
			case f.Summary.Live-f.Summary.Draining <= 1:
				return fmt.Errorf("%s is the only live worker not draining: its shards would have nowhere to go (the assignor ignores drains when every worker drains); start another worker first: %w", id, ErrLastWorker)
			case takersBut(f, id) == 0 && f.Summary.Cordoned < f.Summary.Live:
				return fmt.Errorf("every live worker but %s is cordoned or draining: its shards would have nowhere to go (a cordoned worker is given nothing new); uncordon one or start another worker first: %w", id, ErrLastWorker)
			}
			return nil
		},
		apply: func(m *shard.Member) { m.Draining = on },
	})
	if w.ID == "" {
		return Drain{}, err
	}
	return Drain{Worker: id, Session: w.Session, Shards: owned(f, id), Changed: changed}, err
}

// owned lists the shards worker id owns in f.
func owned(f fleetview.Fleet, id string) []shard.ID {
	var ids []shard.ID
	for _, s := range f.Shards {
		if s.State == fleetview.ShardOwned && s.Owner == id {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// FollowDrain follows the fleet until the drain d is done: the worker
// owns nothing and every shard in d.Shards has a new live owner. It calls
// onProgress each time the progress changes (starting from all shards
// left, none moved), and passes each failed listing to onError: false
// stops with that error (nil onError: RetryTransient).
//
// It returns the last progress with nil when the drain is done;
// ErrWorkerLeft when the worker's session ended first (the others take
// over what it held); ErrDrainWithdrawn when someone undrained it; and
// ErrDrainUnfinished, beside the context's cause, when ctx ends first
// (the drain stays set).
func (o Operator) FollowDrain(ctx context.Context, d Drain, onProgress func(DrainProgress), onError func(error) bool) (DrainProgress, error) {
	p := DrainProgress{Worker: d.Worker, Left: len(d.Shards), Total: len(d.Shards)}
	var end error
	err := o.follow(ctx, func(f fleetview.Fleet) error {
		w, ok := f.Worker(d.Worker)
		if !ok || !w.Live() {
			end = fmt.Errorf("%s left the fleet (its session ended) before the drain finished: %w", d.Worker, ErrWorkerLeft)
			return fleetview.ErrStop
		}
		if !w.Draining {
			return fmt.Errorf("the drain of %s was withdrawn: %w", d.Worker, ErrDrainWithdrawn)
		}
		next := DrainProgress{Worker: d.Worker, Left: w.Shards, Total: p.Total}
		for _, id := range d.Shards {
			if s, _ := f.Shard(id); s.State == fleetview.ShardOwned && s.Owner != d.Worker {
				next.Moved++
			}
		}
		if next != p {
			p = next
			if onProgress != nil {
				onProgress(p)
			}
		}
		if p.Done() {
			return fleetview.ErrStop
		}
		return nil
	}, onError)
	switch {
	case err != nil:
		return p, err
	case end != nil:
		return p, end
	case p.Done():
		return p, nil
	}
	return p, fmt.Errorf("%s still owns %d shards (%d/%d with new owners): %w: %w", d.Worker, p.Left, p.Moved, p.Total, ErrDrainUnfinished, context.Cause(ctx))
}

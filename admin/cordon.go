package admin

import (
	"context"
	"fmt"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/shard"
)

// Cordon is a worker's cordon as Cordon or Uncordon left it.
type Cordon struct {
	Worker  string
	Session shard.SessionID // the session whose member key was written
	// Mark is the cordon in force after the call: the one written, or the
	// one found when nothing was written; nil when the worker is not
	// cordoned.
	Mark *shard.Mark
	// Shards is how many shards the worker owned when the call read the
	// fleet: what it keeps while cordoned.
	Shards int
	// Changed is false when the worker was already in the state asked
	// for, and nothing was written.
	Changed bool
}

// Cordon stops the assignor from giving a live worker anything new: the
// worker keeps the shards it holds, so nothing moves now (the operator's
// step before a drain, or for a sick machine). The cordon is written into
// the worker's member key with its own session, recording o.By, the time
// and reason; the worker keeps it when it restarts under the same ID, and
// the assignor reads it from the key, so it survives an assignor's
// failover.
//
// It refuses an Operator without By (ErrNoOperator), a worker with no
// member key (ErrUnknownWorker), one whose key has no session
// (ErrWorkerDead), and the last live worker neither cordoned nor draining
// (ErrLastUncordoned: the assignor ignores cordons when every worker is
// cordoned, so the cordon would do nothing). A worker already cordoned is
// not written again (Changed false, Mark the cordon in force).
func (o Operator) Cordon(ctx context.Context, worker, reason string) (Cordon, error) {
	if o.By == "" {
		return Cordon{Worker: worker}, fmt.Errorf("cordon of %s: %w", worker, ErrNoOperator)
	}
	mark := &shard.Mark{By: o.By, At: o.now().UTC(), Reason: reason}
	return o.setCordon(ctx, worker, mark, func(f fleetview.Fleet) error {
		if takersBut(f, worker) == 0 {
			return fmt.Errorf("%s is the only live worker neither cordoned nor draining: the assignor ignores cordons when no worker is left to take shards, so the cordon would do nothing; start another worker or uncordon one first: %w", worker, ErrLastUncordoned)
		}
		return nil
	})
}

// Uncordon lifts a cordon: the worker is given its share again within a
// few assignor turns. It refuses unknown and dead workers as Cordon does;
// a worker not cordoned is not written (Changed false).
func (o Operator) Uncordon(ctx context.Context, worker string) (Cordon, error) {
	return o.setCordon(ctx, worker, nil, nil)
}

// setCordon writes mark (nil: none) as a live worker's cordon.
func (o Operator) setCordon(ctx context.Context, id string, mark *shard.Mark, refuse func(fleetview.Fleet) error) (Cordon, error) {
	_, w, changed, err := o.editMember(ctx, id, memberEdit{
		what:   "cordon",
		done:   func(w fleetview.Worker) bool { return (w.Cordon != nil) == (mark != nil) },
		refuse: refuse,
		apply:  func(m *shard.Member) { m.Cordon = mark },
	})
	c := Cordon{Worker: id, Session: w.Session, Shards: w.Shards, Mark: w.Cordon, Changed: changed}
	if changed {
		c.Mark = mark
	}
	return c, err
}

// takersBut counts the live workers other than id that the assignor may
// give shards to: neither draining nor cordoned.
func takersBut(f fleetview.Fleet, id string) int {
	n := 0
	for _, w := range f.Workers {
		if w.ID != id && w.Live() && !w.Draining && w.Cordon == nil {
			n++
		}
	}
	return n
}

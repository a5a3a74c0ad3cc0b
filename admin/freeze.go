package admin

import (
	"context"
	"fmt"

	"github.com/shardlease/shardlease/shard"
)

// Freeze is the fleet's freeze as Freeze or Unfreeze left it.
type Freeze struct {
	// Mark is the freeze in force after the call: the one written, or
	// the one found when nothing was written; nil when the fleet is not
	// frozen.
	Mark *shard.Mark
	// Changed is false when the fleet was already in the state asked for,
	// and nothing was written.
	Changed bool
}

// Freeze stops every rebalancing move in the fleet: while it is set the
// assignor starts no hand-off between live workers (no rebalancing after
// a join, no drain), and still places shards no live worker holds (a
// crashed worker's, never-owned ones), so a crash is still failed over.
// Hand-offs already in flight finish. It writes P/freeze, held by no
// session, with o.By, the time and reason: it outlives the operator's
// process and any assignor.
//
// It refuses an Operator without By (ErrNoOperator). A fleet already
// frozen is not written again: Changed is false and Mark is the freeze in
// force, with who set it and when.
func (o Operator) Freeze(ctx context.Context, reason string) (Freeze, error) {
	if o.By == "" {
		return Freeze{}, fmt.Errorf("freeze of fleet %s: %w", o.Name, ErrNoOperator)
	}
	s, err := o.Snapshot(ctx)
	if err != nil {
		return Freeze{}, err
	}
	if s.Freeze != nil {
		return Freeze{Mark: s.Freeze}, nil
	}
	mark := &shard.Mark{By: o.By, At: o.now().UTC(), Reason: reason}
	if err := o.Coordinator.Fleet().SetFreeze(ctx, mark); err != nil {
		return Freeze{}, fmt.Errorf("%w: freeze of fleet %s: %w", ErrWrite, o.Name, err)
	}
	return Freeze{Mark: mark, Changed: true}, nil
}

// Unfreeze lifts the freeze: the assignor resumes rebalancing at its next
// turn, as many hand-offs at a time as the fleet's move budget allows.
// A fleet not frozen is not written (Changed false); Mark is the freeze
// that was lifted.
func (o Operator) Unfreeze(ctx context.Context) (Freeze, error) {
	s, err := o.Snapshot(ctx)
	if err != nil {
		return Freeze{}, err
	}
	if s.Freeze == nil {
		return Freeze{}, nil
	}
	if err := o.Coordinator.Fleet().SetFreeze(ctx, nil); err != nil {
		return Freeze{Mark: s.Freeze}, fmt.Errorf("%w: unfreeze of fleet %s: %w", ErrWrite, o.Name, err)
	}
	return Freeze{Mark: s.Freeze, Changed: true}, nil
}

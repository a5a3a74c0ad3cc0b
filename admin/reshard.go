package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// ErrResharding: a reshard is already in progress (start), or none is
// (cancel).
var ErrResharding = errors.New("admin: reshard state does not allow it")

// ErrChildOpen: a reshard can be cancelled only before any child opened;
// one has (it may have run).
var ErrChildOpen = errors.New("admin: a child of the reshard is open")

// ReshardPlan is a reshard an operator asks for.
type ReshardPlan struct {
	// Shards is the new shard count, 1..shard.MaxShards.
	Shards int
	// Name is the stem of the new shards' IDs; empty: the first layout's
	// name with ".r<N>" added (N the layout's number: "stream/shard.r1").
	Name string
	// Lineage says how the new shards descend from the current ones
	// (shard.LineageMod when empty); Parents lists each new shard's
	// parents for shard.LineageExplicit.
	Lineage shard.Lineage
	Parents [][]int
	// Reason is recorded with who started it (Operator.By) and when.
	Reason string
}

// Reshard starts a reshard of the fleet to plan's shard set and returns
// the config stored afterwards. Every current shard becomes a parent: its
// owner is asked to close it at its end (worker.Claim.Closing); each new
// shard starts once all its parents are closed, with their final
// checkpoints (docs/operations.md, "Resharding").
//
// It refuses, writing nothing: a reshard in progress, or a shard closed
// by a cancelled one and not owned since (ErrResharding); a
// live worker that does not speak shard.StepReshard (ErrStepMissing,
// naming it: release 0.1.0 would run the old shards again); a plan
// shard.Config.Validate refuses, a count equal to the current one under
// LineageMod (nothing would change), and a By that is empty
// (shard.ErrInvalidArgument). A reshard started by another operator
// between the read and the write wraps shard.ErrConfigChanged.
func (o Operator) Reshard(ctx context.Context, plan ReshardPlan) (shard.Config, error) {
	s, err := o.Snapshot(ctx)
	if err != nil {
		return shard.Config{}, err
	}
	cfg := *s.Config
	if l, ok := cfg.Reshard(); ok {
		return cfg, fmt.Errorf("%w: fleet %s is already resharding to %d shards named %q (started by %s at %s); let it finish or cancel it first (shardctl reshard -cancel)",
			ErrResharding, o.Name, l.Shards, l.Name, l.Started.By, l.Started.At.Format(time.RFC3339))
	}
	if old := Lacking(s, shard.StepReshard); len(old) > 0 {
		return cfg, fmt.Errorf("%w: fleet %s: live workers %s do not speak %q (release 0.1.0 or older) and would run the old shards again; upgrade or stop them first",
			ErrStepMissing, o.Name, strings.Join(old, ", "), shard.StepReshard)
	}
	if o.By == "" {
		return cfg, fmt.Errorf("%w: a reshard records who started it: set the operator's By (shardctl -by)", shard.ErrInvalidArgument)
	}
	// A shard released as closed and not owned since was closed by a
	// reshard that was cancelled: a new reshard would take that mark for
	// its own and open its children from the old end, skipping what the
	// shard received after the cancel.
	for _, st := range s.Shards {
		if !st.Held() && st.Token != 0 && st.Owner.Released == shard.ReasonClosed && cfg.Acquirable(st.Shard) {
			return cfg, fmt.Errorf("%w: fleet %s: shard %s was closed by a cancelled reshard and has not run since; wait until the fleet owns it again (shardctl status), then reshard",
				ErrResharding, o.Name, st.Shard)
		}
	}
	l := shard.Layout{Shards: plan.Shards, Name: plan.Name, Lineage: plan.Lineage, Parents: plan.Parents,
		Started: shard.Mark{By: o.By, At: o.now(), Reason: plan.Reason}}
	if l.Lineage == "" {
		l.Lineage = shard.LineageMod
	}
	if l.Name == "" {
		l.Name = fmt.Sprintf("%s.r%d", cfg.Normalize().Name, len(cfg.Layouts)+1)
	}
	if n, _ := cfg.Current(); l.Lineage == shard.LineageMod && n == l.Shards {
		return cfg, fmt.Errorf("%w: fleet %s has %d shards already: a reshard to the same count under lineage %q moves every key to itself; give another count",
			shard.ErrInvalidArgument, o.Name, n, l.Lineage)
	}
	to := append(cfg.Layouts[:len(cfg.Layouts):len(cfg.Layouts)], l)
	stored, err := o.Coordinator.Fleet().SetLayouts(ctx, cfg.Layouts, to)
	if err != nil {
		return stored, fmt.Errorf("%w: resharding fleet %s: %w", ErrWrite, o.Name, err)
	}
	return stored, nil
}

// CancelReshard cancels the reshard in progress: its children never run,
// and the parents already closed are placed again and resume from their
// ends (a producer that switched to the new layout must switch back).
// It returns the config stored afterwards.
//
// It refuses, writing nothing: no reshard in progress (ErrResharding); a
// child already open, which may have run (ErrChildOpen: let the reshard
// finish, or reshard back); a By that is empty (shard.ErrInvalidArgument).
// Children open only with a write of the config, checked and set as this
// one is, so a child opened between the read and the write makes the
// cancel fail with shard.ErrConfigChanged instead.
func (o Operator) CancelReshard(ctx context.Context, reason string) (shard.Config, error) {
	s, err := o.Snapshot(ctx)
	if err != nil {
		return shard.Config{}, err
	}
	cfg := *s.Config
	l, ok := cfg.Reshard()
	if !ok {
		return cfg, fmt.Errorf("%w: fleet %s is not resharding: nothing to cancel", ErrResharding, o.Name)
	}
	if len(l.Opened) > 0 {
		rp, _ := s.Reshard()
		return cfg, fmt.Errorf("%w: fleet %s: %d of the %d children are open (the first %s) and may have run; a reshard is cancelled only before any child opens — let it finish, or reshard back",
			ErrChildOpen, o.Name, len(rp.Opened), l.Shards, first(rp.Opened))
	}
	if o.By == "" {
		return cfg, fmt.Errorf("%w: a cancel records who cancelled: set the operator's By (shardctl -by)", shard.ErrInvalidArgument)
	}
	to := append([]shard.Layout(nil), cfg.Layouts...)
	to[len(to)-1].Cancelled = &shard.Mark{By: o.By, At: o.now(), Reason: reason}
	stored, err := o.Coordinator.Fleet().SetLayouts(ctx, cfg.Layouts, to)
	if err != nil {
		return stored, fmt.Errorf("%w: cancelling the reshard of fleet %s: %w", ErrWrite, o.Name, err)
	}
	return stored, nil
}

func first(ids []shard.ID) shard.ID {
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

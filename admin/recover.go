package admin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Recovery is what Recover found and did.
type Recovery struct {
	// Config is the fleet's stored config after the call; its Generation
	// is the fleet's generation.
	Config shard.Config
	// From is the generation before the call.
	From uint32
	// Highest is the highest token the offsets store holds for any of the
	// fleet's shards (a floor, or a commit's token).
	Highest shard.Token
	// Behind lists the shards whose store floor is above every token the
	// coordinator could grant in the fleet's generation: its history is
	// older than the store's (rebuilt empty, or restored from an older
	// snapshot), and their claims' fences are refused.
	Behind []shard.ID
	// Floors are the store's floors of the shards behind, as read.
	Floors map[shard.ID]shard.Token
	// To is the generation the recovery raises the fleet to (or would):
	// one above the highest found in the store and the coordinator.
	To uint32
	// Raised reports whether the generation was raised. It is false when
	// nothing was behind and the call was not forced, and for
	// CheckRecovery: nothing was written.
	Raised bool
}

// CheckRecovery reads what Recover would find and do, and writes nothing.
func (o Operator) CheckRecovery(ctx context.Context, store offsets.Store) (Recovery, error) {
	return o.recovery(ctx, store, false, false)
}

// Recover puts the fleet's tokens above every token its offsets store
// holds, after the coordinator lost its history: it reads every shard's
// checkpoint from store, and when a floor is above what the coordinator
// can grant (or when force), raises the fleet's generation
// (shard.Fleet.RaiseGeneration) to one above the highest generation found
// in the store and the coordinator. Every claim taken afterwards then
// fences; the workers retry the shards whose fences were refused within
// their backoff (at most 10 s).
//
// It is an operator's decision, never taken automatically, because it
// ends the old history's protection against the new: a process of the
// fleet still attached to another coordinator (the old one, still
// reachable by some) keeps running its shards until a worker of this one
// claims them, and from then on its commits are refused. Effects written
// through the store's fence (offsets, FencedTx) never overlap; effects
// outside it may, for as long as such a process runs.
//
// Errors: no valid config key (*NoFleetError; a worker writes it when it
// joins); a live worker that does not speak shard.StepGenerations (it
// could not own a shard afterwards; ErrStepMissing names it); the store
// or the coordinator failing.
func (o Operator) Recover(ctx context.Context, store offsets.Store, force bool) (Recovery, error) {
	return o.recovery(ctx, store, true, force)
}

func (o Operator) recovery(ctx context.Context, store offsets.Store, write, force bool) (Recovery, error) {
	s, err := o.Snapshot(ctx)
	if err != nil {
		return Recovery{}, err
	}
	cfg := *s.Config
	r := Recovery{Config: cfg, From: cfg.Generation}
	if old := Lacking(s, shard.StepGenerations); len(old) > 0 {
		return r, fmt.Errorf("%w: recovery of fleet %s raises the fleet's generation, and live workers %s do not speak %q (release 0.1.0 or older): "+
			"their claims would all be refused; upgrade or stop them first", ErrStepMissing, o.Name, strings.Join(old, ", "), shard.StepGenerations)
	}
	cps, err := fleetview.LoadOffsets(ctx, store, cfg.IDs())
	if err != nil {
		return r, fmt.Errorf("recovery of fleet %s: %w", o.Name, err)
	}
	ceiling, err := shard.MakeToken(cfg.Generation, s.Index)
	if err != nil {
		return r, fmt.Errorf("recovery of fleet %s: %w", o.Name, err)
	}
	gen := cfg.Generation
	for _, id := range cfg.IDs() {
		cp := cps[id]
		r.Highest = max(r.Highest, cp.Floor, cp.Token)
		if cp.Floor > ceiling {
			r.Behind = append(r.Behind, id)
			if r.Floors == nil {
				r.Floors = map[shard.ID]shard.Token{}
			}
			r.Floors[id] = cp.Floor
		}
	}
	for _, st := range s.Shards {
		gen = max(gen, st.Token.Generation())
	}
	r.To = max(gen, r.Highest.Generation()) + 1
	if !write || len(r.Behind) == 0 && !force {
		return r, nil
	}
	stored, err := o.Coordinator.Fleet().RaiseGeneration(ctx, r.To)
	if err != nil {
		return r, fmt.Errorf("%w: recovery of fleet %s: %w", ErrWrite, o.Name, err)
	}
	r.Config, r.Raised = stored, true
	return r, nil
}

// Lacking names the live members of s that do not speak step, each with
// the release its member key names, sorted: who a change that needs the
// step waits for.
func Lacking(s shard.Snapshot, step string) []string {
	var out []string
	for _, m := range s.Members {
		if m.Live() && !m.HasStep(step) {
			out = append(out, fmt.Sprintf("%s (%s)", m.ID, releaseOf(m.Member)))
		}
	}
	slices.Sort(out)
	return out
}

// releaseOf is the release a member key names, for a message.
func releaseOf(m shard.Member) string {
	if m.Version == "" {
		return "release unknown"
	}
	return m.Version
}

// Recovered reports whether a listing s shows the fleet recovered after
// r: every shard of r's config held, those that were behind with a token
// at or above the floor they had (a token of the new generation, or one
// the coordinator's own writes took past it).
func Recovered(s shard.Snapshot, r Recovery) bool {
	held := 0
	for _, st := range s.Shards {
		if !st.Held() {
			continue
		}
		if floor, behind := r.Floors[st.Shard]; behind && st.Token < floor {
			continue
		}
		held++
	}
	return held == r.Config.Shards
}

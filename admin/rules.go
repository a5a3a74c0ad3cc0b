package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/assignor"
	"github.com/shardlease/shardlease/shard"
)

// ErrNoPolicy: the fleet stores no readable balance policy, so there is
// none to add rules to: its assignor follows its own worker's
// configuration, which an operator's tool cannot see. Store one first
// (shardctl balance -by count or -by load).
var ErrNoPolicy = errors.New("admin: the fleet stores no readable balance policy")

// ErrWouldStrand: the rules asked for would leave shards that some live
// worker may take now with none allowed to; they would stay unowned.
// SetRules with force writes them anyway.
var ErrWouldStrand = errors.New("admin: the rules would leave shards with no worker allowed to own them")

// ErrMatchesNothing: a rule being added is about no shard of the fleet
// (a misspelt prefix, or a '*' the shell expanded); SetRules with force
// writes it anyway.
var ErrMatchesNothing = errors.New("admin: a placement rule is about no shard of the fleet")

// RulesChange is what SetRules did or would do.
type RulesChange struct {
	Old, New []shard.PlacementRule
	// Unplaceable are the shards no live worker may be given under the
	// new rules (sorted), and Before under the old ones.
	Unplaceable, Before []shard.ID
}

// SetRules replaces the fleet's placement rules with rules (none: every
// rule removed), keeping the rest of its stored balance policy, and
// returns what changed. The assignor follows them from its next step.
//
// It refuses, writing nothing: rules Validate refuses, or more than
// shard.MaxRules (shard.ErrInvalidArgument); a fleet that stores no
// readable policy (ErrNoPolicy); a live worker that does not speak
// shard.StepRules, because release 0.1.0 reads P/policy strictly and
// could not read a policy with rules (ErrStepMissing naming it; removing
// every rule is allowed then); and, unless force, rules under which a
// shard that a live worker may take now would have none allowed
// (ErrWouldStrand, naming how many and the first: a pin to a label
// misspelt would otherwise leave its shards unowned), or a rule not
// stored before that is about no shard of the fleet (ErrMatchesNothing).
// Two operators at once: the last write wins (there is no compare-and-set
// on the policy); RulesChange.Old says what it replaced.
func (o Operator) SetRules(ctx context.Context, rules []shard.PlacementRule, force bool) (RulesChange, error) {
	s, err := o.Snapshot(ctx)
	if err != nil {
		return RulesChange{}, err
	}
	if s.Policy == nil {
		return RulesChange{}, fmt.Errorf("%w: fleet %s; its assignor follows its own worker's flags: store one first with shardctl balance -by count (or -by load)", ErrNoPolicy, o.Name)
	}
	old := *s.Policy
	p := old.Clone()
	p.Rules = rules
	if err := p.Validate(); err != nil {
		return RulesChange{}, err
	}
	c := RulesChange{Old: old.Rules, New: p.Rules}
	if err := PolicyReadable(s, o.Name, shard.BalancePolicy{Rules: rules}); err != nil {
		return c, err
	}
	now := time.Now()
	before, err := assignor.Plan(s, old, now)
	if err != nil {
		return c, err
	}
	after, err := assignor.Plan(s, p, now)
	if err != nil {
		return c, err
	}
	c.Before, c.Unplaceable = before.Unplaceable, after.Unplaceable
	if added := newlyStranded(c.Before, c.Unplaceable); len(added) > 0 && !force {
		return c, fmt.Errorf("%w: fleet %s: %d shards (first %s) would have no live worker the rules allow (check the labels: shardctl status lists each worker's); give -force to write them anyway",
			ErrWouldStrand, o.Name, len(added), added[0])
	}
	if idle := matchNothing(rules, old.Rules, s.Config.IDs()); len(idle) > 0 && !force {
		return c, fmt.Errorf("%w: fleet %s: rule %q is about no shard of the fleet (its shards are %s … %s; quote a '*' from the shell); give -force to write it anyway",
			ErrMatchesNothing, o.Name, idle[0], s.Config.IDs()[0], s.Config.IDs()[len(s.Config.IDs())-1])
	}
	if _, err := o.Coordinator.Fleet().SetPolicy(ctx, p, false); err != nil {
		return c, fmt.Errorf("%w: rules of fleet %s: %w", ErrWrite, o.Name, err)
	}
	return c, nil
}

// newlyStranded are the shards of after (sorted) not in before (sorted).
func newlyStranded(before, after []shard.ID) []shard.ID {
	var out []shard.ID
	for _, id := range after {
		if _, found := slices.BinarySearch(before, id); !found {
			out = append(out, id)
		}
	}
	return out
}

// matchNothing are the rules of rules not among old that are about no
// shard of ids.
func matchNothing(rules, old []shard.PlacementRule, ids []shard.ID) []shard.PlacementRule {
	var out []shard.PlacementRule
	for _, r := range rules {
		if slices.ContainsFunc(old, r.Equal) || slices.ContainsFunc(ids, r.Matches) {
			continue
		}
		out = append(out, r)
	}
	return out
}

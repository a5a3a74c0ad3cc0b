package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
// misspelt would otherwise leave its shards unowned). Two operators at
// once: the last write wins; RulesChange.Old says what it replaced.
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
	if old := lacking(s, shard.StepRules); len(old) > 0 && len(rules) > 0 {
		return c, fmt.Errorf("%w: fleet %s: live workers %s do not speak %q (release 0.1.0 or older) and could not read a balance policy with rules; upgrade or stop them first",
			ErrStepMissing, o.Name, strings.Join(old, ", "), shard.StepRules)
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
	if added := len(c.Unplaceable) - len(c.Before); added > 0 && !force {
		return c, fmt.Errorf("%w: fleet %s: %d shards (first %s) would have no live worker the rules allow (check the labels: shardctl status lists each worker's); give -force to write them anyway",
			ErrWouldStrand, o.Name, added, c.Unplaceable[0])
	}
	if _, err := o.Coordinator.Fleet().SetPolicy(ctx, p, false); err != nil {
		return c, fmt.Errorf("%w: rules of fleet %s: %w", ErrWrite, o.Name, err)
	}
	return c, nil
}

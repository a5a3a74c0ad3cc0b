package admin

import (
	"fmt"
	"strings"

	"github.com/shardlease/shardlease/shard"
)

// PolicyReadable returns nil when every live member of s can read policy
// p, and otherwise an error wrapping ErrStepMissing that names the fleet,
// the workers that could not, their release and the step they lack:
// placement rules need shard.StepRules, standbys and a prepare timeout
// shard.StepStandbys (release 0.1.0 reads P/policy strictly). Every
// writer of P/policy checks it before writing: SetRules, SetStandbys,
// shardctl balance.
func PolicyReadable(s shard.Snapshot, fleet string, p shard.BalancePolicy) error {
	for _, need := range []struct {
		step, what string
		uses       bool
	}{
		{shard.StepRules, "placement rules", len(p.Rules) > 0},
		{shard.StepStandbys, "standbys or a prepare timeout", p.Standbys != 0 || p.PrepareTimeout != 0},
	} {
		if old := Lacking(s, need.step); need.uses && len(old) > 0 {
			return fmt.Errorf("%w: fleet %s: live workers %s do not speak %q (release 0.1.0 or older) and could not read a balance policy with %s; upgrade or stop them first",
				ErrStepMissing, fleet, strings.Join(old, ", "), need.step, need.what)
		}
	}
	return nil
}

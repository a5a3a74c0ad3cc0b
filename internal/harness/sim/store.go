package sim

import (
	"context"

	"github.com/shardlease/shardlease/internal/inproc"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/offsetstest/history"
	"github.com/shardlease/shardlease/shard"
)

// newAuditor wraps the run's offset store in the auditor every fence and
// commit goes through (inproc.Auditor): each problem it finds is a
// violation, effect is told of every commit before it reaches the store,
// and the whole history is kept for checkHistory.
func newAuditor(s offsets.Store, c *checker, effect func(shard.Claim)) *inproc.Auditor {
	return inproc.NewAuditor(s, inproc.AuditOptions{
		History:   true,
		Effect:    effect,
		Violation: func(msg string) { c.violate("%s", msg) },
	})
}

// checkHistory checks the auditor's whole history of fences and commits
// against the store's final checkpoints (history.Check).
func checkHistory(ctx context.Context, a *inproc.Auditor, c *checker) {
	ops := a.History()
	final := map[shard.ID]offsets.Checkpoint{}
	loaded := map[shard.ID]bool{}
	for _, op := range ops {
		if loaded[op.Shard] {
			continue
		}
		loaded[op.Shard] = true
		cp, err := a.Load(ctx, op.Shard)
		if err != nil {
			c.violate("loading %s at the end: %v", op.Shard, err)
			continue
		}
		final[op.Shard] = cp
	}
	for _, p := range history.Check(ops, final) {
		c.violate("history: %s", p)
	}
}

package assignor

import (
	"slices"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/shard"
)

// unplaceable remembers the shards the placement rules last stranded, so
// that the log says when the set changes, not at every step.
type unplaceable struct{ last []shard.ID }

// report logs ids (sorted) when they differ from the last ones: a warning
// naming how many and the first few, or that none is left.
func (u *unplaceable) report(ids []shard.ID, log *zap.Logger) {
	if slices.Equal(ids, u.last) {
		return
	}
	u.last = slices.Clone(ids)
	if len(ids) == 0 {
		log.Info("every shard may be placed again: no placement rule strands one")
		return
	}
	first := ids[:min(len(ids), 8)]
	log.Warn("placement rules let no live worker be given these shards; they stay unowned until a worker the rules allow joins, or the rules change (shardctl rules)",
		zap.Int("shards", len(ids)), zap.Any("first", first))
}

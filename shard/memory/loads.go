package memory

import (
	"context"
	"fmt"
	"maps"

	"github.com/shardlease/shardlease/internal/keycodec"
	"github.com/shardlease/shardlease/shard"
)

// loadsKey is P/loads/<worker>: the worker's figures and the session that
// wrote them (empty once that session ended).
type loadsKey struct {
	load    map[shard.ID]float64
	session shard.SessionID
	index   uint64
}

// ReportLoad writes worker's loads key with the session, in one write,
// if the session holds worker's member key; the member key is not
// touched. Errors, each leaving everything as it was: bad figures, an
// empty worker or a value over shard.MaxLoadBytes
// (shard.ErrInvalidArgument); a shard outside the stored config
// (shard.ErrUnknownShard); the session gone (shard.ErrSessionInvalid); the
// member key missing, dead or another session's (shard.ErrNotMember).
func (ms members) ReportLoad(ctx context.Context, id shard.SessionID, worker string, load map[shard.ID]float64) error {
	c := ms.c
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if worker == "" {
		return fmt.Errorf("%w: report load: worker id is empty", shard.ErrInvalidArgument)
	}
	if _, err := keycodec.EncodeLoad(worker, load); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catchUpLocked()

	for sh := range load {
		if err := c.checkShardLocked(sh); err != nil {
			return fmt.Errorf("loads of worker %q: %w", worker, err)
		}
	}
	if _, err := c.liveSessionLocked(id); err != nil {
		return err
	}
	if m := c.members[worker]; m == nil || m.session != id {
		holder := "it is missing"
		if m != nil && m.session == "" {
			holder = "it is dead (held by no session)"
		} else if m != nil {
			holder = fmt.Sprintf("session %q holds it", m.session)
		}
		return fmt.Errorf("%w: session %q does not hold member key %q (%s): its loads are not written", shard.ErrNotMember, id, worker, holder)
	}
	idx := c.commitLocked()
	c.loads[worker] = &loadsKey{load: maps.Clone(load), session: id, index: idx}
	return nil
}

// memberLoadLocked is the Load a snapshot shows for member key k of
// worker id: the loads key's figures while k's live session holds it,
// else what k's value carries itself (a member key written before loads
// had their own key), else nil. A copy: the caller may keep it.
func (c *Coordinator) memberLoadLocked(id string, k *memberKey) map[shard.ID]float64 {
	if l := c.loads[id]; l != nil && l.session != "" && l.session == k.session {
		return maps.Clone(l.load)
	}
	return nil
}

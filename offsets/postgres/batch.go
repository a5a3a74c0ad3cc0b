package postgres

import (
	"context"
	"fmt"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Entry and BatchError are the offsets package's, shared by every
// backend that commits in batches.
type (
	Entry      = offsets.Entry
	BatchError = offsets.BatchError
)

// CommitBatch commits many shards in one round trip: one conditional upsert
// statement over all entries, each entry checked against its own shard's
// floor exactly as Commit checks it. Entries with a stale token are refused
// and the others committed; the error is then a *BatchError saying which.
//
// The batch is checked before anything is sent: an invalid entry (as
// Commit would refuse it) or a shard named twice fails the whole batch with
// an error naming the entry, and nothing is written. Any other error
// (unreachable server, done context, ErrOutcomeUnknown) concerns every
// entry alike.
func (st *Store) CommitBatch(ctx context.Context, batch []Entry) error {
	seen := make(map[shard.ID]int, len(batch))
	for i, e := range batch {
		if _, err := offsets.ApplyCommit(offsets.Checkpoint{}, e.Shard, e.Token, e.Offset); err != nil {
			return fmt.Errorf("offsets/postgres: batch entry %d: %w", i, err)
		}
		if err := st.check(ctx, "commit batch", e.Shard, e.Token); err != nil {
			return fmt.Errorf("offsets/postgres: batch entry %d: %w", i, err)
		}
		if j, dup := seen[e.Shard]; dup {
			return fmt.Errorf("offsets/postgres: batch entries %d and %d are both for shard %s: %w", j, i, e.Shard, shard.ErrInvalidArgument)
		}
		seen[e.Shard] = i
	}
	if len(batch) == 0 {
		return nil
	}

	errs := make([]error, len(batch))
	pending := make([]int, len(batch)) // indexes still to commit
	for i := range pending {
		pending[i] = i
	}
	for try := 0; len(pending) > 0; try++ {
		shards := make([]string, len(pending))
		offs := make([]int64, len(pending))
		toks := make([]int64, len(pending))
		for k, i := range pending {
			shards[k], offs[k], toks[k] = string(batch[i].Shard), batch[i].Offset, int64(batch[i].Token)
		}
		accepted, err := st.runBatch(ctx, shards, offs, toks)
		if err != nil {
			return err
		}
		var refusedIdx []int
		var refusedShards []string
		for _, i := range pending {
			if !accepted[string(batch[i].Shard)] {
				refusedIdx = append(refusedIdx, i)
				refusedShards = append(refusedShards, string(batch[i].Shard))
			}
		}
		if len(refusedIdx) == 0 {
			break
		}
		// As in write: the refusals are certain, the read only names the
		// floors, so it survives the end of ctx.
		readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelGrace)
		floors, err := st.floors(readCtx, refusedShards)
		cancel()
		if err != nil {
			return fmt.Errorf("offsets/postgres: commit batch: %d entries refused (%w), and reading their floors failed: %w", len(refusedIdx), offsets.ErrStaleToken, err)
		}
		pending = pending[:0]
		for _, i := range refusedIdx {
			e := batch[i]
			if f := floors[e.Shard]; f > e.Token {
				errs[i] = &offsets.StaleTokenError{Shard: e.Shard, Token: e.Token, Floor: f}
			} else {
				pending = append(pending, i) // row edited by hand in between: see write
			}
		}
		if len(pending) > 0 && try >= maxTries {
			return fmt.Errorf("offsets/postgres: commit batch: %d entries refused although their floors are not above their tokens: is someone editing %s?",
				len(pending), st.table)
		}
	}
	for _, err := range errs {
		if err != nil {
			return &BatchError{Errs: errs}
		}
	}
	return nil
}

// runBatch runs the batch statement with the retry policy of write and
// returns the shards it accepted.
func (st *Store) runBatch(ctx context.Context, shards []string, offs, toks []int64) (map[string]bool, error) {
	for try := 0; ; try++ {
		conn, err := st.pool.Acquire(ctx)
		if err != nil {
			if st.closed.Load() {
				return nil, offsets.ErrClosed
			}
			if retry(ctx, try, err, notSent) {
				continue
			}
			return nil, st.fail(ctx, fmt.Sprintf("commit batch of %d", len(shards)), "", err, notSent)
		}
		accepted := make(map[string]bool, len(shards))
		rows, err := conn.Query(ctx, st.sql.batch, shards, offs, toks)
		if err == nil {
			for rows.Next() {
				var s string
				if err = rows.Scan(&s); err != nil {
					break
				}
				accepted[s] = true
			}
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
		conn.Release()
		if err == nil {
			return accepted, nil
		}
		a := classify(err, true)
		if retry(ctx, try, err, a) {
			continue
		}
		return nil, st.fail(ctx, fmt.Sprintf("commit batch of %d", len(shards)), "", err, a)
	}
}

// floors reads the floors of the given shards (absent: 0).
func (st *Store) floors(ctx context.Context, shards []string) (map[shard.ID]shard.Token, error) {
	rows, err := st.pool.Query(ctx, st.sql.floors, shards)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	floors := make(map[shard.ID]shard.Token, len(shards))
	for rows.Next() {
		var s string
		var f int64
		if err := rows.Scan(&s, &f); err != nil {
			return nil, err
		}
		floors[shard.ID(s)] = shard.Token(f)
	}
	return floors, rows.Err()
}

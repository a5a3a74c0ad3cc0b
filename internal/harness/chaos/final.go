package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/shardlease/shardlease/internal/offsetlog"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
)

// LoadFinal loads every shard's final checkpoint from the PostgreSQL store
// at dsn through a recording store writing to path, once a fleet has
// stopped, so that the final state is checked with the rest of the
// history (History.Check: no acknowledged commit lost).
func LoadFinal(ctx context.Context, dsn, path string, shards int) error {
	st, err := postgres.Open(ctx, postgres.Config{DSN: dsn})
	if err != nil {
		return err
	}
	defer st.Close()
	out, err := offsetlog.OpenFile(path)
	if err != nil {
		return err
	}
	defer out.Close()
	rec := offsetlog.New(st, out, "final")
	for _, id := range (shard.Config{Shards: shards}).IDs() {
		if _, err := rec.Load(ctx, id); err != nil {
			return fmt.Errorf("final load of %s: %w", id, err)
		}
	}
	return nil
}

// ReadFinal is what a test of a stopped fleet checks: it loads every
// shard's final checkpoint into dir/final.jsonl (LoadFinal, within a
// minute) and reads it with the workers' histories.
func ReadFinal(ctx context.Context, dsn, dir string, shards int, histories []string) ([]offsetlog.Op, []offsetlog.Interval, error) {
	final := filepath.Join(dir, "final.jsonl")
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := LoadFinal(ctx, dsn, final, shards); err != nil {
		return nil, nil, err
	}
	return offsetlog.ReadAll(append(slices.Clone(histories), final)...)
}

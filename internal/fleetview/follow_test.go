package fleetview

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// busy is a coordinator whose every listing has a new index, after block.
type busy struct {
	failing
	block time.Duration

	mu    sync.Mutex
	index uint64
}

func (b *busy) Watch(ctx context.Context, _ uint64) (shard.Snapshot, error) {
	if b.block > 0 {
		select {
		case <-ctx.Done():
			return shard.Snapshot{}, ctx.Err()
		case <-time.After(b.block):
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.index++
	return shard.Snapshot{Index: b.index}, nil
}

// TestFollowListsAtABoundedRate: a fleet whose index moves on every
// listing is listed at most every MinSpacing; a change after a long block
// is still delivered at once.
func TestFollowListsAtABoundedRate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		block time.Duration
		want  []time.Duration // when fn saw each snapshot
	}{
		{"busy", 0, []time.Duration{0, MinSpacing, 2 * MinSpacing, 3 * MinSpacing}},
		{"quiet", time.Second, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				ctx, cancel := context.WithTimeout(t.Context(), 4*MinSpacing-time.Millisecond)
				if tc.block > 0 {
					ctx, cancel = context.WithTimeout(t.Context(), 3*tc.block+time.Millisecond)
				}
				defer cancel()
				var got []time.Duration
				err := Follow(ctx, (&busy{block: tc.block}).Watch, func(shard.Snapshot) error {
					got = append(got, time.Since(start))
					if len(got) > 2*len(tc.want) { // unbounded: fake time stands still
						return errors.New("listing without a pause")
					}
					return nil
				}, nil)
				if err != nil || len(got) != len(tc.want) {
					t.Fatalf("Follow = %v; fn at %v, want %v", err, got, tc.want)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Fatalf("fn at %v, want %v", got, tc.want)
					}
				}
			})
		})
	}
}

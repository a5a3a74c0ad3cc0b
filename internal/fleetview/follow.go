package fleetview

import (
	"context"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// MinSpacing is the least time between the starts of two listings made by
// one Follow. Each listing is the whole prefix (at 10,000 shards, megabytes
// for Consul to encode), and a busy fleet moves the index many times a
// second, so without a floor every dashboard and shardctl watch would list
// continuously. With it a follower lists at most four times a second, and a
// burst of writes within 250 ms costs it one listing; a change after a quiet
// spell is still seen at once (the blocking query returns when it happens).
const MinSpacing = 250 * time.Millisecond

// Follow is shard.Follow of a fleet's listings (watch is a shard.Fleet's
// Watch), at least MinSpacing apart: fn gets every snapshot whose index
// moved (the first one at once); onError (nil: retry every error) decides
// whether a failed listing ends it. It returns nil when ctx ends or fn
// returns ErrStop.
func Follow(ctx context.Context, watch func(context.Context, uint64) (shard.Snapshot, error), fn func(shard.Snapshot) error, onError func(error) bool) error {
	return shard.Follow(ctx, watch, shard.FollowOptions{MinSpacing: MinSpacing, OnError: onError},
		func(s shard.Snapshot) (time.Time, error) { return time.Time{}, fn(s) })
}

// ErrStop, returned by Follow's fn, ends Follow with a nil error.
var ErrStop = shard.ErrStopFollowing

package procfleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// ErrNoAssignor: nobody holds P/assignor when a harness needs to know who
// does.
var ErrNoAssignor = errors.New("no worker holds the assignor lock")

// Observer reads a shardlease fleet's prefix as a third party would, with
// a coordinator of its own that never joins: who owns what, and who holds
// P/assignor. Safe for concurrent use.
type Observer struct {
	c      Observed
	prefix string
}

// Observed is the coordinator an Observer reads through: shard/consul's
// or shard/etcd's, whose Close also releases what it opened.
type Observed interface {
	shard.Coordinator
	DeleteFleet(ctx context.Context) error
	Close()
}

// NewObserver makes an observer of the fleet at cfg's address and prefix.
func NewObserver(cfg consul.Config) (*Observer, error) {
	c, err := consul.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Observer{c: c, prefix: cfg.Prefix}, nil
}

// NewObserverOn makes an observer of the fleet at prefix through c, which
// it closes on Close.
func NewObserverOn(c Observed, prefix string) *Observer { return &Observer{c: c, prefix: prefix} }

// Snapshot reads the prefix, with after > 0 a blocking query that returns
// once it changed past index after.
func (o *Observer) Snapshot(ctx context.Context, after uint64) (shard.Snapshot, error) {
	return o.c.Fleet().Watch(ctx, after)
}

// View is Snapshot as a View.
func (o *Observer) View(ctx context.Context, after uint64) (View, error) {
	snap, err := o.Snapshot(ctx, after)
	if err != nil {
		return View{}, err
	}
	return SnapshotView(snap), nil
}

// Assignor reads P/assignor alone (a listing of the prefix would read
// every shard), with after > 0 a blocking query past index after.
func (o *Observer) Assignor(ctx context.Context, after uint64) (shard.LockKey, error) {
	return o.c.Locks().Watch(ctx, shard.AssignorLock, after)
}

// ElectWithin bounds how long AssignorWorker waits, when it must name a
// holder, for one to take a free P/assignor: a fleet elects a new
// assignor within a lock-delay and a little of the lock's last holder
// ending, and a worker starved of CPU on a loaded machine can lose its
// session (and the role) for a moment at any time.
const ElectWithin = 30 * time.Second

// AssignorWorker returns the worker whose session holds P/assignor: ""
// while the lock is free, unless must: then it waits, following the key,
// for a holder, up to ElectWithin, and says ErrNoAssignor if none came.
func (o *Observer) AssignorWorker(ctx context.Context, must bool) (string, error) {
	k, err := o.Assignor(ctx, 0)
	if err != nil {
		return "", fmt.Errorf("%s: reading P/assignor: %w", o.prefix, err)
	}
	if !must || k.Held() {
		return k.Worker, nil
	}
	wctx, cancel := context.WithTimeout(ctx, ElectWithin)
	defer cancel()
	stop := func(error) bool { return false } // a failed read is the caller's to judge
	err = shard.Follow(wctx, o.Assignor, shard.FollowOptions{After: k.Index, OnError: stop}, func(next shard.LockKey) (time.Time, error) {
		k = next
		if k.Held() {
			return time.Time{}, shard.ErrStopFollowing
		}
		return time.Time{}, nil
	})
	switch {
	case err != nil:
		return "", fmt.Errorf("%s: reading P/assignor: %w", o.prefix, err)
	case !k.Held():
		return "", fmt.Errorf("%s: %w within %v (P/assignor %+v)", o.prefix, ErrNoAssignor, ElectWithin, k)
	}
	return k.Worker, nil
}

// DeleteFleet deletes every key under the prefix: best effort, so that a
// given agent does not keep every run's keys.
func (o *Observer) DeleteFleet(ctx context.Context) error { return o.c.DeleteFleet(ctx) }

// Coordinator is the observer's coordinator, for an operator's action on
// the fleet (a reshard, a freeze) from the harness.
func (o *Observer) Coordinator() shard.Coordinator { return o.c }

// Close releases the observer's connections.
func (o *Observer) Close() { o.c.Close() }

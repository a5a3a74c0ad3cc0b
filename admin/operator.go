package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/shard"
)

// Operator acts on one fleet through its coordinator. The zero value is
// not usable: Coordinator is required. An Operator holds no state between
// calls; it is safe for concurrent use when its Coordinator is.
type Operator struct {
	// Coordinator reaches the fleet: its Watch lists it and its Join and
	// Release write with the sessions the listing shows. Operators' tools
	// should give it a member grace long enough that their reads delete no
	// dead member keys.
	Coordinator shard.Coordinator
	// Name names the fleet in error messages (its prefix, as the operator
	// typed it).
	Name string
	// By names who acts, recorded with the cordons and freezes it sets
	// (a user name, user@host); required by Cordon and Freeze.
	By string
	// Now is the clock for the fleet views built from listings; nil means
	// time.Now.
	Now func() time.Time
}

// NoFleetError is the error for a prefix without a valid config key. It
// wraps ErrNoFleet.
type NoFleetError struct {
	// Name is the Operator's Name.
	Name string
	// Empty is true when nothing of a fleet is under the prefix (no
	// members, no shard keys): most likely a wrong prefix. Otherwise the
	// config key is missing or unreadable and Problems says why.
	Empty    bool
	Problems []string
}

func (e *NoFleetError) Error() string {
	if e.Empty {
		return fmt.Sprintf("no fleet %q: there is no config key under its prefix", e.Name)
	}
	return fmt.Sprintf("fleet %q has members or shards but no valid config key: %s", e.Name, strings.Join(e.Problems, "; "))
}

func (e *NoFleetError) Unwrap() error { return ErrNoFleet }

// Snapshot lists the fleet once. The coordinator's errors are returned as
// they are; a listing without a valid config key is a *NoFleetError.
func (o Operator) Snapshot(ctx context.Context) (shard.Snapshot, error) {
	s, err := o.Coordinator.Fleet().Watch(ctx, 0)
	if err != nil {
		return s, err
	}
	if s.Config == nil {
		return s, &NoFleetError{Name: o.Name, Empty: len(s.Members) == 0 && len(s.Shards) == 0, Problems: s.Problems}
	}
	return s, nil
}

// view lists the fleet and builds its operator's model.
func (o Operator) view(ctx context.Context) (fleetview.Fleet, shard.Snapshot, error) {
	s, err := o.Snapshot(ctx)
	if err != nil {
		return fleetview.Fleet{}, s, err
	}
	return o.build(s), s, nil
}

func (o Operator) build(s shard.Snapshot) fleetview.Fleet {
	return fleetview.Build(fleetview.Input{Name: o.Name, Snapshot: s, Now: o.now()})
}

func (o Operator) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// follow is fleetview.Follow with the operator's default for onError.
func (o Operator) follow(ctx context.Context, fn func(fleetview.Fleet) error, onError func(error) bool) error {
	if onError == nil {
		onError = RetryTransient
	}
	return fleetview.Follow(ctx, o.Coordinator.Fleet().Watch, func(s shard.Snapshot) error { return fn(o.build(s)) }, onError)
}

// RetryTransient is the default onError of the operations that follow the
// fleet: it retries every failed listing but a refusal for lack of
// permission, which would fail the same way again.
func RetryTransient(err error) bool { return !errors.Is(err, shard.ErrPermissionDenied) }

// ResolveShard returns the shard of the fleet config cfg named by arg: a
// shard ID (stream/shard-007) or its number (7). Anything else wraps
// ErrUnknownShard, naming the fleet's range.
func ResolveShard(name string, cfg shard.Config, arg string) (shard.ID, error) {
	ids := cfg.IDs()
	if slices.Contains(ids, shard.ID(arg)) {
		return shard.ID(arg), nil
	}
	n := len(ids)
	if i, err := strconv.Atoi(arg); err == nil && i >= 0 && i < n {
		return ids[i], nil
	}
	span := ""
	if n > 0 {
		span = fmt.Sprintf(": %s … %s, or a number 0..%d", ids[0], ids[n-1], n-1)
	}
	return "", fmt.Errorf("no shard %q in fleet %s (it has %d shards%s): %w", arg, name, n, span, ErrUnknownShard)
}

// list shows up to 20 names.
func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) > 20 {
		return strings.Join(names[:20], ", ") + fmt.Sprintf(", … (%d in all)", len(names))
	}
	return strings.Join(names, ", ")
}

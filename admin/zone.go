package admin

import (
	"context"
	"fmt"
	"slices"

	"github.com/shardlease/shardlease/internal/fleetview"
)

// ZoneWorkers returns the IDs of the live workers in zone, sorted, and
// the fleet as read; ErrUnknownZone (naming the zones there are) when
// there are none.
func (o Operator) ZoneWorkers(ctx context.Context, zone string) ([]string, fleetview.Fleet, error) {
	f, _, err := o.view(ctx)
	if err != nil {
		return nil, f, err
	}
	var ids, zones []string
	for _, w := range f.Workers {
		if !w.Live() {
			continue
		}
		if w.Zone == zone {
			ids = append(ids, w.ID)
		}
		if !slices.Contains(zones, w.Zone) {
			zones = append(zones, w.Zone)
		}
	}
	if len(ids) == 0 {
		slices.Sort(zones)
		return nil, f, fmt.Errorf("no live worker in zone %q of fleet %s (zones: %s): %w", zone, o.Name, list(zones), ErrUnknownZone)
	}
	return ids, f, nil
}

// takersOutside counts the live workers outside zone that the assignor
// may give shards to: neither draining nor cordoned.
func takersOutside(f fleetview.Fleet, zone string) int {
	n := 0
	for _, w := range f.Workers {
		if w.Zone != zone && w.Live() && !w.Draining && w.Cordon == nil {
			n++
		}
	}
	return n
}

// DrainZone drains every live worker of zone (maintenance of a zone): the
// assignor gives the zone nothing and its shards move to the other zones,
// in proportion to their capacity, as the move budget allows, each by a
// graceful hand-off. It refuses an unknown zone (ErrUnknownZone) and one
// whose drain would leave no live worker outside it to take its shards
// (ErrLastWorker), before anything is written. Workers are drained one by
// one, as Drain does; the drains set before a failure stay set and are
// returned with the error.
func (o Operator) DrainZone(ctx context.Context, zone string) ([]Drain, error) {
	ids, f, err := o.ZoneWorkers(ctx, zone)
	if err != nil {
		return nil, err
	}
	if takersOutside(f, zone) == 0 {
		return nil, fmt.Errorf("no live worker outside zone %q is neither cordoned nor draining: its shards would have nowhere to go; start or uncordon one first: %w", zone, ErrLastWorker)
	}
	return eachWorker(ids, func(id string) (Drain, error) { return o.Drain(ctx, id) })
}

// UndrainZone withdraws the drain of every live worker of zone: the zone
// takes its share again within the move budget.
func (o Operator) UndrainZone(ctx context.Context, zone string) ([]Drain, error) {
	ids, _, err := o.ZoneWorkers(ctx, zone)
	if err != nil {
		return nil, err
	}
	return eachWorker(ids, func(id string) (Drain, error) { return o.Undrain(ctx, id) })
}

// CordonZone cordons every live worker of zone: nothing moves now, and
// the zone is given nothing new. It refuses an unknown zone and one whose
// cordon would leave no live worker outside it to take shards
// (ErrLastUncordoned), before anything is written.
func (o Operator) CordonZone(ctx context.Context, zone, reason string) ([]Cordon, error) {
	if o.By == "" {
		return nil, fmt.Errorf("cordon of zone %s: %w", zone, ErrNoOperator)
	}
	ids, f, err := o.ZoneWorkers(ctx, zone)
	if err != nil {
		return nil, err
	}
	if takersOutside(f, zone) == 0 {
		return nil, fmt.Errorf("no live worker outside zone %q is neither cordoned nor draining: the assignor ignores cordons when no worker is left to take shards, so the cordon would do nothing: %w", zone, ErrLastUncordoned)
	}
	return eachWorker(ids, func(id string) (Cordon, error) { return o.Cordon(ctx, id, reason) })
}

// UncordonZone lifts the cordon of every live worker of zone: the zone is
// given its share again, in proportion to its capacity, within the move
// budget.
func (o Operator) UncordonZone(ctx context.Context, zone string) ([]Cordon, error) {
	ids, _, err := o.ZoneWorkers(ctx, zone)
	if err != nil {
		return nil, err
	}
	return eachWorker(ids, func(id string) (Cordon, error) { return o.Uncordon(ctx, id) })
}

// eachWorker applies act to each worker in turn and stops at the first
// error, which names the worker; what was done before stays done and is
// returned with it.
func eachWorker[T any](ids []string, act func(id string) (T, error)) ([]T, error) {
	out := make([]T, 0, len(ids))
	for _, id := range ids {
		r, err := act(id)
		if err != nil {
			return out, fmt.Errorf("%s (done before it: %d of %d workers of the zone): %w", id, len(out), len(ids), err)
		}
		out = append(out, r)
	}
	return out, nil
}

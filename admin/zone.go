package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/shardlease/shardlease/internal/fleetview"
)

// ZoneWorkers returns the IDs of the live workers in zone, sorted, the
// zone's workers that are not live (dead member keys: crashed, or
// restarting), and the fleet as read; ErrUnknownZone (naming the zones
// there are) when no live worker is in it. An empty zone is refused: it
// would name the workers without one, which are no zone to maintain.
func (o Operator) ZoneWorkers(ctx context.Context, zone string) (live, down []string, f fleetview.Fleet, err error) {
	if zone == "" {
		return nil, nil, f, fmt.Errorf("an empty zone names no zone (workers without --zone are not one): %w", ErrUnknownZone)
	}
	if f, _, err = o.view(ctx); err != nil {
		return nil, nil, f, err
	}
	var zones []string
	for _, w := range f.Workers {
		switch {
		case w.Zone == zone && w.Live():
			live = append(live, w.ID)
		case w.Zone == zone:
			down = append(down, w.ID)
		}
		z := w.Zone
		if z == "" {
			z = "(none)"
		}
		if w.Live() && !slices.Contains(zones, z) {
			zones = append(zones, z)
		}
	}
	if len(live) == 0 {
		slices.Sort(zones)
		return nil, down, f, fmt.Errorf("no live worker in zone %q of fleet %s (zones: %s)%s: %w", zone, o.Name, list(zones), downNote(down), ErrUnknownZone)
	}
	return live, down, f, nil
}

// downNote says which workers of a zone are not live, for a message.
func downNote(down []string) string {
	if len(down) == 0 {
		return ""
	}
	return fmt.Sprintf("; its workers %s are not live (crashed, or restarting)", list(down))
}

// ErrZoneWorkersDown wraps what a zone operation says of the zone's
// workers that are not live: it acted on the live ones, and the others'
// member keys keep their marks (a worker restarting carries a cordon or a
// drain over), so the operation must be run again once they are back.
var ErrZoneWorkersDown = errors.New("admin: some of the zone's workers are not live")

// zoneDown is the error for the zone's workers that were not acted on.
func zoneDown(what, zone string, down []string) error {
	if len(down) == 0 {
		return nil
	}
	return fmt.Errorf("zone %s: %s of %s not done for %s, not live (crashed, or restarting: a restarting worker keeps the mark its key has); run it again once they are back: %w",
		zone, what, zone, list(down), ErrZoneWorkersDown)
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
// one, as Drain does, on through failures: the drains set are returned
// with every failure joined, and the zone's workers that are not live
// (ErrZoneWorkersDown: they must be drained once back). The zone
// operations below work the same way.
func (o Operator) DrainZone(ctx context.Context, zone string) ([]Drain, error) {
	ids, down, f, err := o.ZoneWorkers(ctx, zone)
	if err != nil {
		return nil, err
	}
	if takersOutside(f, zone) == 0 {
		return nil, fmt.Errorf("no live worker outside zone %q is neither cordoned nor draining: its shards would have nowhere to go; start or uncordon one first: %w", zone, ErrLastWorker)
	}
	ds, err := eachWorker(ids, func(id string) (Drain, error) { return o.Drain(ctx, id) })
	return ds, errors.Join(err, zoneDown("the drain", zone, down))
}

// UndrainZone withdraws the drain of every live worker of zone: the zone
// takes its share again within the move budget.
func (o Operator) UndrainZone(ctx context.Context, zone string) ([]Drain, error) {
	ids, down, _, err := o.ZoneWorkers(ctx, zone)
	if err != nil {
		return nil, err
	}
	ds, err := eachWorker(ids, func(id string) (Drain, error) { return o.Undrain(ctx, id) })
	return ds, errors.Join(err, zoneDown("the undrain", zone, down))
}

// CordonZone cordons every live worker of zone: nothing moves now, and
// the zone is given nothing new. It refuses an unknown zone and one whose
// cordon would leave no live worker outside it to take shards
// (ErrLastUncordoned), before anything is written.
func (o Operator) CordonZone(ctx context.Context, zone, reason string) ([]Cordon, error) {
	if o.By == "" {
		return nil, fmt.Errorf("cordon of zone %s: %w", zone, ErrNoOperator)
	}
	ids, down, f, err := o.ZoneWorkers(ctx, zone)
	if err != nil {
		return nil, err
	}
	if takersOutside(f, zone) == 0 {
		return nil, fmt.Errorf("no live worker outside zone %q is neither cordoned nor draining: the assignor ignores cordons when no worker is left to take shards, so the cordon would do nothing: %w", zone, ErrLastUncordoned)
	}
	cs, err := eachWorker(ids, func(id string) (Cordon, error) { return o.Cordon(ctx, id, reason) })
	return cs, errors.Join(err, zoneDown("the cordon", zone, down))
}

// UncordonZone lifts the cordon of every live worker of zone: the zone is
// given its share again, in proportion to its capacity, within the move
// budget.
func (o Operator) UncordonZone(ctx context.Context, zone string) ([]Cordon, error) {
	ids, down, _, err := o.ZoneWorkers(ctx, zone)
	if err != nil {
		return nil, err
	}
	cs, err := eachWorker(ids, func(id string) (Cordon, error) { return o.Uncordon(ctx, id) })
	return cs, errors.Join(err, zoneDown("the uncordon", zone, down))
}

// eachWorker applies act to each worker in turn, on through failures,
// and returns what was done with the failures joined, each naming its
// worker: one worker restarting does not keep the rest of its zone from
// being acted on.
func eachWorker[T any](ids []string, act func(id string) (T, error)) ([]T, error) {
	out := make([]T, 0, len(ids))
	var errs []error
	for _, id := range ids {
		r, err := act(id)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

package main

import (
	"context"
	"errors"
	"fmt"
)

// victimRule says which worker a take-away trial may take away.
type victimRule uint8

const (
	// anyWorker: members owning a shard take turns.
	anyWorker victimRule = iota
	// notAssignor: the same, leaving out the assignor's worker, so that
	// the row measures a worker's failover alone.
	notAssignor
	// theAssignor: the worker whose session holds P/assignor (shardlease
	// only: the baseline has no assignor).
	theAssignor
)

// errNoAssignor: nobody holds P/assignor when a scenario needs to know who
// does.
var errNoAssignor = errors.New("no worker holds the assignor lock")

// assignorOf returns the worker whose session holds P/assignor in f, read
// from one listing of the prefix by f's observer: "" for a fleet without
// an assignor (the baseline), or while the lock is free unless must.
func assignorOf(ctx context.Context, f fleet, must bool) (string, error) {
	sl, ok := f.(*slFleet)
	if !ok {
		if must {
			return "", fmt.Errorf("%s: %w (it has no assignor)", f.system(), errNoAssignor)
		}
		return "", nil
	}
	snap, err := sl.observer.Watch(ctx, 0)
	if err != nil {
		return "", err
	}
	if must && snap.Assignor.Worker == "" {
		return "", fmt.Errorf("%s: %w (P/assignor %+v)", sl.cfg.Prefix, errNoAssignor, snap.Assignor)
	}
	return snap.Assignor.Worker, nil
}

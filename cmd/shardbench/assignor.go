package main

import (
	"context"
	"fmt"

	"github.com/shardlease/shardlease/internal/harness/procfleet"
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

// assignorOf returns the worker whose session holds P/assignor in f, read
// from that one key (a listing of the prefix would read every shard): ""
// for a fleet without an assignor (the baselines), or while the lock is
// free unless must.
func assignorOf(ctx context.Context, f fleet, must bool) (string, error) {
	if a, ok := f.(interface {
		assignor(ctx context.Context, must bool) (string, error)
	}); ok {
		return a.assignor(ctx, must)
	}
	return noAssignor(f, must)
}

// noAssignor is the answer of a fleet without an assignor.
func noAssignor(f fleet, must bool) (string, error) {
	if must {
		return "", fmt.Errorf("%s: %w (it has no assignor)", f.system(), procfleet.ErrNoAssignor)
	}
	return "", nil
}

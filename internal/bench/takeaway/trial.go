package takeaway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
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

// victim picks the worker of r to take away in trial i: members owning at
// least one shard take turns, those pick allows; theAssignor picks the
// worker whose session holds P/assignor.
func victim(ctx context.Context, r *fleet.Run, i int, pick victimRule) (string, []string, error) {
	v, err := r.F.View(ctx, 0)
	if err != nil {
		return "", nil, err
	}
	assignor, err := fleet.AssignorOf(ctx, r.F, pick == theAssignor)
	if err != nil {
		return "", nil, err
	}
	if pick == theAssignor {
		return assignor, v.ShardsOf(assignor), nil
	}
	var owning []string
	for _, m := range v.Members {
		if len(v.ShardsOf(m)) > 0 && (pick == anyWorker || m != assignor) {
			owning = append(owning, m)
		}
	}
	if len(owning) == 0 {
		return "", nil, errors.New("no worker owns a shard")
	}
	slices.Sort(owning)
	id := owning[i%len(owning)]
	return id, v.ShardsOf(id), nil
}

// reownedBy is the failover condition: every shard in lost is owned by a
// worker other than gone.
func reownedBy(gone string, lost []string) func(procfleet.View) bool {
	return func(v procfleet.View) bool {
		for _, s := range lost {
			if w, ok := v.Owners[s]; !ok || w == gone {
				return false
			}
		}
		return true
	}
}

// keepsAll reports whether worker id still owns every shard in lost.
func keepsAll(v procfleet.View, id string, lost []string) bool {
	for _, s := range lost {
		if v.Owners[s] != id {
			return false
		}
	}
	return true
}

// measure times, over the trials, from taking one worker away (crash or
// clean stop) until its shards are owned again, for one system; a new
// worker replaces it between trials.
func measure(ctx context.Context, env *bench.Env, system, scenario string, crash bool, pick victimRule, shape fleet.Shape, trials int, within time.Duration) (Figures, error) {
	var fig Figures
	r, err := fleet.Start(ctx, env, system, scenario, shape)
	if err != nil {
		return fig, err
	}
	defer r.F.Close()
	for i := range trials {
		id, lost, err := victim(ctx, r, i, pick)
		if err != nil {
			return fig, err
		}
		var stopped <-chan struct{}
		t0 := time.Now()
		if crash {
			r.F.Crash(id)
		} else {
			stopped = r.F.Stop(id)
		}
		// freed: when the first of its shards was seen leaving it (for a
		// crash, Consul's invalidation of the session): the failover
		// splits into Consul's detection and the takeover after it.
		var freed time.Time
		done := reownedBy(id, lost)
		_, t1, err := fleet.WaitFor(ctx, r.F, within, fmt.Sprintf("%s's %d shards owned again", id, len(lost)), func(v procfleet.View) bool {
			if freed.IsZero() && !keepsAll(v, id, lost) {
				freed = time.Now()
			}
			return done(v)
		})
		if err != nil {
			return fig, err
		}
		started, err := handlersStarted(ctx, r.F.Starts(), lost, t0)
		if err != nil {
			return fig, fmt.Errorf("%s's %d shards: %w", id, len(lost), err)
		}
		fig.Owned = append(fig.Owned, t1.Sub(t0).Seconds())
		fig.Handlers = append(fig.Handlers, started.Sub(t0).Seconds())
		fig.Freed = append(fig.Freed, freed.Sub(t0).Seconds())
		fig.Shards = append(fig.Shards, float64(len(lost)))
		env.Logf("shardbench: %s %s trial %d: %s's %d shards owned again after %v, their new handlers all started after %v (first freed after %v)",
			scenario, system, i+1, id, len(lost), t1.Sub(t0).Round(time.Millisecond), started.Sub(t0).Round(time.Millisecond), freed.Sub(t0).Round(time.Millisecond))
		if stopped != nil {
			<-stopped
		}
		if err := r.AddWorker(ctx); err != nil {
			return fig, err
		}
		if err := r.Settle(ctx); err != nil {
			return fig, err
		}
	}
	return fig, nil
}

// handlersStarted waits until every shard of lost has a handler that
// started after t0 and returns the latest start. The observer saw every
// shard owned, so the handlers are starting or have started.
func handlersStarted(ctx context.Context, l *procfleet.StartLog, lost []string, t0 time.Time) (time.Time, error) {
	if len(lost) == 0 {
		return time.Time{}, errors.New("the victim owned no shard: nothing to time")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if at, ok := l.Last(lost, t0); ok {
			return at, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("owned again, but the new handlers of %s did not start within 10 s", l.NotStarted(lost, t0))
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

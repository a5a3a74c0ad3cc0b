package takeaway

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/fleet"
	"github.com/shardlease/shardlease/shard"
)

// Params are a take-away scenario's fleets and trials.
type Params struct {
	// Fleet is the fleet every system runs, as OS processes (12 × 128);
	// Scale the large in-process fleet shardlease alone runs (100 ×
	// 10,000).
	Fleet, Scale fleet.Size
	// MinTrials is the least number of trials of a row, whatever --trials
	// says: p99 over 5 trials would be the slowest of them. No trial takes
	// minutes: the slowest, the default baseline's crash, takes about 45 s.
	MinTrials int
	// DefaultPolicyCrashes (crash-failover's) runs the crashes on the
	// default policy too, the large fleet's included: about 20 s a trial (a
	// 10 s check TTL and a 10 s lock-delay), left out of a smoke run.
	DefaultPolicyCrashes bool
	// Quick runs the default baseline quick (fleet.Shape.Quick).
	Quick bool
}

// variant is one row of a take-away scenario.
type variant struct {
	system, metric string
	pick           victimRule
	shape          fleet.Shape
}

// variants lists a take-away scenario's rows. On the common fleet (OS
// processes), every system on each policy: shardlease and the tuned
// baseline on the fast policy and on the default one, the default baseline
// on its own defaults; and shardlease's assignor's worker taken away, on
// the fast policy. On the large fleet (in-process), shardlease alone: a
// stop of a worker and of the assignor's, and a crash of the assignor's.
// Without p.DefaultPolicyCrashes, the crashes on the default policy are
// left out, the large fleet's included.
func variants(p Params, crash bool) []variant {
	const metric = "time until its shards have new handlers running"
	assignorGone := metric + ", the assignor's worker stopped"
	if crash {
		assignorGone = metric + ", the assignor's worker crashed"
	}
	fast, def, scale := fleet.Fast(p.Fleet), fleet.Default(p.Fleet), fleet.AtScale(p.Scale)
	fast.Processes, def.Processes = true, true
	fast.Quick, def.Quick = p.Quick, p.Quick
	vs := []variant{
		{bench.SystemShardlease, metric, notAssignor, fast}, {bench.SystemShardlease, assignorGone, theAssignor, fast},
		{bench.SystemTuned, metric, anyWorker, fast},
	}
	slow := crash && !p.DefaultPolicyCrashes
	if !slow {
		vs = append(vs, variant{bench.SystemShardlease, metric, notAssignor, def}, variant{bench.SystemTuned, metric, anyWorker, def})
	}
	vs = append(vs, variant{bench.SystemBaseline, metric, anyWorker, fast})
	if !crash {
		vs = append(vs, variant{bench.SystemShardlease, metric, notAssignor, scale})
	}
	if !slow {
		vs = append(vs, variant{bench.SystemShardlease, assignorGone, theAssignor, scale})
	}
	return vs
}

// within bounds one trial's wait for the victim's shards: a few
// times what the policy's detection and lock-delay take.
func within(v variant) time.Duration {
	switch {
	case v.system == bench.SystemBaseline:
		// A 15 s session TTL (which Consul may stretch to 30 s), a 15 s
		// lock-delay and a 5 s retry.
		return 2 * time.Minute
	case v.shape.AtScale:
		return time.Minute
	}
	return max(30*time.Second, 3*(v.shape.Policy.TTL+v.shape.Policy.EffectiveLockDelay()))
}

// Figures are a take-away row's samples, one per trial.
type Figures struct {
	// Handlers: until every shard of the victim has a new handler running.
	Handlers []float64
	// Owned: until every shard of the victim is owned again, as the
	// observer saw it; Freed: until the first of them left the victim.
	Owned, Freed []float64
	Shards       []float64 // how many the victim owned
}

// Measure takes a worker that is not the assignor's away from a
// shardlease fleet of shape, trials times (a crash with crash, else a
// clean stop), and returns the figures: the engines scenario's rows.
func Measure(ctx context.Context, env *bench.Env, scenario string, crash bool, shape fleet.Shape, trials int) (Figures, error) {
	v := variant{system: bench.SystemShardlease, pick: notAssignor, shape: shape}
	return measure(ctx, env, v.system, scenario, crash, v.pick, v.shape, trials, within(v))
}

// Rows runs a take-away scenario's variants: a crash (SIGKILL, or the
// Consul connection cut) with crash, else a clean stop (SIGTERM). The rows
// of one comparison share scenario, metric and Policy: shardlease's and the
// tuned baseline's name the shardlease policy, the default baseline's
// bench.PolicyDefaults.
func Rows(ctx context.Context, env *bench.Env, scenario string, crash bool, p Params) ([]bench.Result, error) {
	var rows []bench.Result
	for _, v := range variants(p, crash) {
		trials := max(env.Trials, p.MinTrials)
		fig, err := measure(ctx, env, v.system, scenario, crash, v.pick, v.shape, trials, within(v))
		if len(fig.Owned) == 0 {
			return rows, fmt.Errorf("%s, %s, %s: %w", v.system, v.shape.PolicyName, v.shape.Metric(v.metric), err)
		}
		row := fig.Row(scenario, v.system, v.shape.Metric(v.metric))
		if err != nil {
			row = row.WithNote(fmt.Sprintf("only %d of %d trials: %v", len(fig.Owned), trials, err))
		}
		if v.shape.Processes {
			row = row.WithNote("each worker an OS process (crash: SIGKILL; stop: SIGTERM); the time ends at the new handlers' start lines, by the workers' wall clocks")
		} else {
			row = row.WithNote("in-process workers (crash: their Consul connection cut)")
		}
		switch v.system {
		case bench.SystemShardlease:
			row = shardleaseTakeAwayGoal(row.WithPolicy(v.shape.PolicyName, v.shape.Policy), crash, v)
		case bench.SystemTuned:
			row = withTunedPolicy(row, v.shape.PolicyName, v.shape.Policy)
		default:
			row = withDefaultsPolicy(row, p.Quick)
		}
		rows = append(rows, row)
		if err != nil {
			return rows, fmt.Errorf("%s, %s, %s: %w", v.system, v.shape.PolicyName, v.shape.Metric(v.metric), err)
		}
	}
	return rows, nil
}

// Row is the figures' row: the time until the new handlers run, with
// the rest beside it.
func (fig Figures) Row(scenario, system, metric string) bench.Result {
	// The time ends when the last of the victim's shards has a new
	// handler running, as the workers report it: when work resumes. The
	// time the observer saw every shard owned again is beside it
	// (kv_visible_s); it lags by one listing of the prefix.
	return bench.Measured(scenario, system, metric, "s", fig.Handlers).With("shards_per_trial_p50", bench.Percentile(fig.Shards, 50)).
		With("first_freed_s_p50", bench.Percentile(fig.Freed, 50)).With("first_freed_s_p99", bench.Percentile(fig.Freed, 99)).
		With("kv_visible_s_p50", bench.Percentile(fig.Owned, 50)).With("kv_visible_s_p99", bench.Percentile(fig.Owned, 99))
}

// shardleaseTakeAwayGoal states a shardlease row's goal, on the fast
// policy (docs/benchmarks.md, "Results"), and what its victim was.
func shardleaseTakeAwayGoal(row bench.Result, crash bool, v variant) bench.Result {
	fast := v.shape.PolicyName == bench.PolicyFast
	switch {
	case !crash && v.pick == theAssignor:
		return row.WithNote("the victim holds P/assignor: it resigns, and a new assignor is elected and lists the fleet before the shards move; no goal of its own")
	case crash && v.pick == theAssignor:
		// P/assignor is freed with the shards; the next candidate takes
		// it a lock-delay (and up to a quarter more) later, lists the
		// fleet and assigns before anyone can acquire.
		row = row.WithNote("the victim holds P/assignor: a new assignor is elected before the shards move")
		if !fast {
			return row
		}
		return row.WithGoal("p99 <= 3.5s", row.P99 <= 3.5)
	case !crash:
		row = row.WithNote("never the assignor's worker (its stop is another row)")
		goal := 100 * time.Millisecond
		if v.shape.AtScale {
			goal = 500 * time.Millisecond
		}
		return row.WithGoal(fmt.Sprintf("p99 <= %v", goal), row.P99 <= goal.Seconds())
	}
	// Detection is about the check TTL after the victim's last renewal and
	// the takeover a lock-delay and one Acquire after that, so every
	// failover pays the lock-delay rule's floor (ttl − pause).
	row = row.WithNote("never the assignor's worker (its crash is another row)")
	if !fast {
		return row
	}
	return row.WithGoal("p99 <= 3s", row.P99 <= 3)
}

// withTunedPolicy names the shardlease policy the tuned baseline was tuned
// to, with the settings it took from it.
func withTunedPolicy(r bench.Result, name string, p shard.LeasePolicy) bench.Result {
	r.Policy = name
	r = r.With("check_ttl_s", p.TTL.Seconds()).With("renew_s", p.RenewEvery.Seconds()).With("lock_delay_s", p.EffectiveLockDelay().Seconds())
	return r.WithNote(fmt.Sprintf("api.Lock tuned to %s: one session per worker bound to a TTL check of %v passed every %v, lock-delay %v; "+
		"at most ⌈N/W⌉ shards a worker; a try refused in lock-delay retried a lock-delay later; no fence: the time ends when the lock is acquired",
		name, p.TTL, p.RenewEvery, p.EffectiveLockDelay()))
}

// withDefaultsPolicy states the default baseline's settings: api.Lock's
// own (quick, in a smoke run: a 10 s session TTL and a 1 ms lock-delay,
// and a crashed worker's sessions destroyed by the harness).
func withDefaultsPolicy(r bench.Result, quick bool) bench.Result {
	r.Policy = bench.PolicyDefaults
	ttl, _ := time.ParseDuration(api.DefaultLockSessionTTL)
	delay, how := 15*time.Second, "" // the session default
	if quick {
		ttl, delay, how = 10*time.Second, time.Millisecond, " (--small: a crashed worker's sessions are destroyed by the harness)"
	}
	r = r.With("session_ttl_s", ttl.Seconds()).With("lock_delay_s", delay.Seconds()).With("lock_retry_s", api.DefaultLockRetryTime.Seconds())
	return r.WithNote(fmt.Sprintf("api.Lock defaults%s: one session per lock, session TTL %v (Consul acts on it after up to twice that), lock-delay %v, "+
		"a retry %v after a refusal in lock-delay, %v blocking queries; never rebalances; no fence: the time ends when the lock is acquired",
		how, ttl, delay, api.DefaultLockRetryTime, api.DefaultLockWaitTime))
}

// Declare makes a take-away scenario: Rows with crash, at the sizes of the
// run.
func Declare(name, summary string, crash bool, sizes bench.Sizes[Params]) bench.Scenario {
	return bench.Declare(name, summary, sizes, func(ctx context.Context, env *bench.Env, p Params) ([]bench.Result, error) {
		return Rows(ctx, env, name, crash, p)
	})
}

package lockops

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/shard/consul"
)

// Name is the scenario's name on the command line and in its rows.
const Name = "lock-ops"

// Sizes are how long each trial of each mode sends locks, at full size and
// for a smoke run.
var Sizes = bench.Sizes[time.Duration]{Full: 3 * time.Second, Small: 300 * time.Millisecond}

// Scenario is lock-ops.
var Scenario = bench.Declare(Name,
	"raw Consul lock operations per second on the run's agent: one KV acquire per request, and 64 or 128 per /v1/txn",
	Sizes, run)

func run(ctx context.Context, env *bench.Env, window time.Duration) ([]bench.Result, error) {
	const scenario = Name
	client, err := api.NewClient(env.APIConfig())
	if err != nil {
		return nil, err
	}
	modes := []struct {
		metric  string
		perTxn  int  // 0: one KV acquire per request
		withGet bool // each lock followed by a get of its key (shard/consul's Acquire)
	}{
		{"lock ops/s, one KV acquire per request", 0, false},
		{fmt.Sprintf("lock ops/s, %d locks + %d gets per /v1/txn", consul.MaxTxnShards, consul.MaxTxnShards), consul.MaxTxnShards, true},
		{fmt.Sprintf("lock ops/s, %d locks per /v1/txn", consul.MaxTxnOps), consul.MaxTxnOps, false},
	}
	rates := make([][]float64, len(modes))
	requests := make([][]float64, len(modes))
	for trial := range env.Trials {
		for i, m := range modes {
			ops, reqs, elapsed, err := lockBurst(ctx, client, m.perTxn, m.withGet, window)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.metric, err)
			}
			rates[i] = append(rates[i], float64(ops)/elapsed.Seconds())
			requests[i] = append(requests[i], float64(reqs)/elapsed.Seconds())
			env.Logf("shardbench: %s trial %d: %s: %d locks in %d requests in %v (%.0f/s)",
				scenario, trial+1, m.metric, ops, reqs, elapsed.Round(time.Millisecond), float64(ops)/elapsed.Seconds())
		}
	}
	var rows []bench.Result
	for i, m := range modes {
		row := bench.Measured(scenario, "consul", m.metric, "ops/s", rates[i])
		row = row.With("requests_per_s_p50", bench.Percentile(requests[i], 50))
		if m.perTxn > 0 {
			row = row.With("ops_per_request", float64(m.perTxn))
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// lockBurst locks fresh keys under a prefix of its own for window, perTxn
// per transaction (0: one acquire per request), then deletes the prefix
// and the session. It returns the locks granted, the requests sent and the
// time they took.
func lockBurst(ctx context.Context, client *api.Client, perTxn int, withGet bool, window time.Duration) (ops, reqs int, elapsed time.Duration, err error) {
	prefix := "shardbench/lock-ops-" + bench.RandomHex(4)
	// No TTL (nothing renews it during the burst) and no lock-delay.
	sid, _, err := client.Session().Create(&api.SessionEntry{Name: "shardbench lock-ops", LockDelay: 0, Behavior: api.SessionBehaviorDelete},
		(&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("creating a session: %w", err)
	}
	defer func() {
		cctx := context.WithoutCancel(ctx)
		_, _ = client.Session().Destroy(sid, (&api.WriteOptions{}).WithContext(cctx))
		_, _ = client.KV().DeleteTree(prefix+"/", (&api.WriteOptions{}).WithContext(cctx))
	}()
	value := []byte(`{"worker":"shardbench","reason":"lock-ops"}`)
	key := func(i int) string { return fmt.Sprintf("%s/k-%07d", prefix, i) }
	start := time.Now()
	for time.Since(start) < window {
		if err := ctx.Err(); err != nil {
			return 0, 0, 0, err
		}
		if perTxn == 0 {
			ok, _, err := client.KV().Acquire(&api.KVPair{Key: key(ops), Value: value, Session: sid}, (&api.WriteOptions{}).WithContext(ctx))
			if err != nil {
				return 0, 0, 0, err
			}
			if !ok {
				return 0, 0, 0, fmt.Errorf("acquire of a fresh key %s refused", key(ops))
			}
			ops++
			reqs++
			continue
		}
		txn := make(api.TxnOps, 0, 2*perTxn)
		for j := range perTxn {
			k := key(ops + j)
			txn = append(txn, &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVLock, Key: k, Value: value, Session: sid}})
			if withGet {
				txn = append(txn, &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVGet, Key: k}})
			}
		}
		ok, resp, _, err := client.Txn().Txn(txn, (&api.QueryOptions{}).WithContext(ctx))
		if err != nil {
			return 0, 0, 0, err
		}
		if !ok {
			return 0, 0, 0, fmt.Errorf("a transaction of %d locks on fresh keys rolled back: %v", perTxn, resp.Errors)
		}
		ops += perTxn
		reqs++
	}
	return ops, reqs, time.Since(start), nil
}

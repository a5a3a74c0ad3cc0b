package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/shard/etcd"
)

// EtcdWorkerKinds are the faults injected into one worker of a fleet on
// etcd: those of WorkerKinds that do not need Consul's HTTP (slow and
// failing renewals are HTTP answers), with the destroy a lease revoked by
// a third party. A fleet on etcd has no client agents.
var EtcdWorkerKinds = []Kind{SigStop, Kill9, Partition, Destroy, PartitionDestroy}

// kinds are the faults RunFaults injects into this fleet, once per
// fault asked of each kind.
func (f *Fleet) kinds() []Kind {
	if f.cfg.Etcd != nil {
		return append(EtcdWorkerKinds[:len(EtcdWorkerKinds):len(EtcdWorkerKinds)], AssignorKinds...)
	}
	return append(append(WorkerKinds[:len(WorkerKinds):len(WorkerKinds)], AssignorKinds...), AgentKinds...)
}

// etcdCoordinator is a third party's coordinator of the fleet on etcd,
// through every member directly (never a worker's proxy), with a client
// of its own. It never deletes dead member keys (the workers' own watches
// do).
func (f *Fleet) etcdCoordinator() (*procfleet.EtcdCoordinator, error) {
	return procfleet.DialEtcd(etcd.Connection{Endpoints: f.cfg.Etcd.Endpoints()}, etcd.Config{Prefix: f.cfg.Prefix, MemberGrace: time.Hour})
}

// etcdOperator is an operator of the fleet on etcd.
func (f *Fleet) etcdOperator() (admin.Operator, func(), error) {
	c, err := f.etcdCoordinator()
	if err != nil {
		return admin.Operator{}, nil, err
	}
	return admin.Operator{Coordinator: c, Name: f.cfg.Prefix, By: "chaos"}, c.Close, nil
}

// findLeases finds the leases of worker's sessions (P/sessions/<lease>
// naming it), as an operator with etcdctl would; the destroy revokes
// them.
func (f *Fleet) findLeases(ctx context.Context, worker string) (sessionsOf, error) {
	cli, err := etcd.Connection{Endpoints: f.cfg.Etcd.Endpoints()}.Dial(nil)
	if err != nil {
		return sessionsOf{}, err
	}
	dir := f.cfg.Prefix + "/sessions/"
	deadline := time.Now().Add(findSessionWait)
	for {
		resp, err := cli.Get(ctx, dir, clientv3.WithPrefix())
		if err != nil {
			_ = cli.Close()
			return sessionsOf{}, fmt.Errorf("chaos: listing %s: %w", dir, err)
		}
		var leases []clientv3.LeaseID
		for _, kv := range resp.Kvs {
			var v struct{ Worker string }
			n, perr := strconv.ParseUint(strings.TrimPrefix(string(kv.Key), dir), 16, 64)
			if json.Unmarshal(kv.Value, &v) == nil && v.Worker == worker && perr == nil {
				leases = append(leases, clientv3.LeaseID(n))
			}
		}
		if len(leases) > 0 {
			return sessionsOf{worker: worker, end: func(ctx context.Context) (int, error) {
				defer cli.Close()
				for n, l := range leases {
					if _, err := cli.Revoke(ctx, l); err != nil {
						return n, fmt.Errorf("chaos: revoking lease %x of %s: %w", int64(l), worker, err)
					}
				}
				return len(leases), nil
			}}, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = cli.Close()
			return sessionsOf{}, fmt.Errorf("chaos: no session of %s under %s within %v", worker, dir, findSessionWait)
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// RunEtcdLeaderKills kills the etcd cluster's leader n times: SIGKILL,
// waiting for the others to elect a new one, restarting the killed member
// and waiting until every member is healthy, then settle. It calls
// t.Fatal when the cluster does not recover, so it must run on the test's
// goroutine.
func RunEtcdLeaderKills(ctx context.Context, t testing.TB, cl *etcdtest.Cluster, n int, settle time.Duration) []Fault {
	t.Helper()
	var faults []Fault
	for range n {
		if ctx.Err() != nil {
			break
		}
		leader, err := cl.Leader(30 * time.Second)
		if err != nil {
			t.Fatalf("chaos: %v", err)
		}
		ft := Fault{Kind: LeaderKill, Target: leader.Name, Start: time.Now()}
		leader.Kill()
		next, err := electedWithout(cl, leader, 30*time.Second)
		if err != nil {
			t.Fatalf("chaos: after killing %s: %v", leader.Name, err)
		}
		ft.Detail = fmt.Sprintf("%s elected in %v", next.Name, time.Since(ft.Start).Round(time.Millisecond))
		if err := leader.Restart(); err != nil {
			t.Fatalf("chaos: restarting %s: %v", leader.Name, err)
		}
		if err := allHealthy(ctx, cl, time.Minute); err != nil {
			t.Fatalf("chaos: after restarting %s: %v", leader.Name, err)
		}
		ft.End = time.Now()
		faults = append(faults, ft)
		sleepCtx(ctx, settle)
	}
	return faults
}

// electedWithout waits for a leader other than gone.
func electedWithout(cl *etcdtest.Cluster, gone *etcdtest.Member, within time.Duration) (*etcdtest.Member, error) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if m, err := cl.Leader(time.Second); err == nil && m != gone {
			return m, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, errors.New("no new leader within " + within.String())
}

// allHealthy waits until every member answers healthy.
func allHealthy(ctx context.Context, cl *etcdtest.Cluster, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		last = nil
		for _, m := range cl.Members {
			if err := m.Healthy(); err != nil {
				last = fmt.Errorf("%s: %w", m.Name, err)
				break
			}
		}
		if last == nil {
			return nil
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	return fmt.Errorf("not every member healthy within %v: %v", within, last)
}

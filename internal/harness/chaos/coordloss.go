package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// CoordWiped: the fleet's whole Consul cluster is replaced by one rebuilt
// empty (every worker's proxy moved to it, the old cluster killed), and
// the operator recovers the fleet with admin.Operator.Recover once the
// old owners have stepped down.
const CoordWiped Kind = "coordinator-wiped"

// ownedAfterRecovery is the runbook's promise: every shard owned again
// within 30 s of the recovery.
const ownedAfterRecovery = 30 * time.Second

// RunCoordinatorWipes replaces the fleet's Consul cluster n times by a new
// one of the same shape, rebuilt empty, and recovers the fleet each time:
// after the TTL and a second (every worker of the old cluster has stepped
// down by its local deadline, so that no new owner starts beside it), once
// the workers rejoined the new cluster and wrote the fleet's config again,
// it runs Recover and waits until every shard is held in the new
// generation. A fault whose recovery finds nothing behind, or whose shards
// are not all owned within 30 s, records the failure in Err. It returns
// the faults and the cluster the fleet runs on at the end. It calls
// t.Fatal when a cluster does not start, so it must run on the test's
// goroutine.
func RunCoordinatorWipes(ctx context.Context, t testing.TB, f *Fleet, cl *consultest.Cluster, n int, tm Timing) ([]Fault, *consultest.Cluster) {
	t.Helper()
	store, err := postgres.Open(ctx, postgres.Config{DSN: f.cfg.DSN})
	if err != nil {
		t.Fatalf("chaos: opening the offsets store: %v", err)
	}
	defer store.Close()
	var victims []string
	for _, w := range f.Workers {
		victims = append(victims, w.ID)
	}
	var faults []Fault
	for range n {
		if ctx.Err() != nil {
			break
		}
		next := consultest.StartCluster(t, len(cl.Agents))
		next.StartClients(t, len(cl.Clients))
		ft := Fault{Kind: CoordWiped, Target: "the Consul cluster", Victims: victims, Start: time.Now()}
		for i, w := range f.Workers {
			w.Proxy.Retarget(next.Clients[i%len(next.Clients)].HTTPAddr)
		}
		for _, a := range append(append([]*consultest.Agent{}, cl.Clients...), cl.Agents...) {
			a.Kill(t)
		}
		cl = next
		f.useCluster(next)
		ft.Detail, ft.Err = f.recoverAfterLoss(ctx, next, store, tm)
		ft.End = time.Now()
		faults = append(faults, ft)
		sleepCtx(ctx, tm.Settle)
	}
	return faults, cl
}

// useCluster points the fleet's agent faults and its own calls at cl's
// client agents, in the order the workers were spread over them.
func (f *Fleet) useCluster(cl *consultest.Cluster) {
	f.cfg.Cluster = cl
	for i, a := range f.Agents {
		a.Agent = cl.Clients[i%len(cl.Clients)]
	}
}

// recoverAfterLoss is the operator's side of a lost coordinator: wait
// past the old owners' step-down, wait for the workers to rejoin, recover,
// and wait for every shard to be owned; it says what it saw, or what went
// wrong.
func (f *Fleet) recoverAfterLoss(ctx context.Context, cl *consultest.Cluster, store *postgres.Store, tm Timing) (detail, problem string) {
	sleepCtx(ctx, tm.TTL+time.Second)
	cfg := consul.DefaultConfig()
	server := cl.Agents[0]
	cfg.Address, cfg.Scheme, cfg.Token, cfg.TokenFile = server.HTTPAddr, "http", server.Token, ""
	cfg.Prefix, cfg.MemberGrace = f.cfg.Prefix, time.Hour
	c, err := consul.New(cfg)
	if err != nil {
		return "", err.Error()
	}
	defer c.Close()
	op := admin.Operator{Coordinator: c, Name: f.cfg.Prefix}
	rejoined := func(s shard.Snapshot) bool {
		live := 0
		for _, m := range s.Members {
			if m.Live() {
				live++
			}
		}
		return s.Config != nil && live == len(f.Workers)
	}
	if err := waitSnapshot(ctx, c, time.Minute, rejoined); err != nil {
		return "", "the workers did not rejoin the new cluster: " + err.Error()
	}
	r, err := op.Recover(ctx, store, false)
	if err != nil {
		return "", "recovery: " + err.Error()
	}
	if !r.Raised {
		return "", fmt.Sprintf("recovery found nothing behind (highest token %d, generation %d)", r.Highest, r.From)
	}
	at := time.Now()
	owned := func(s shard.Snapshot) bool {
		n := 0
		for _, st := range s.Shards {
			if st.Held() && st.Token.Generation() >= r.Config.Generation {
				n++
			}
		}
		return n == f.cfg.Shards
	}
	if err := waitSnapshot(ctx, c, ownedAfterRecovery, owned); err != nil {
		return "", fmt.Sprintf("not every shard owned within %v of the recovery: %v", ownedAfterRecovery, err)
	}
	return fmt.Sprintf("generation %d → %d, %d of %d shards behind; every shard owned %v after the recovery",
		r.From, r.Config.Generation, len(r.Behind), f.cfg.Shards, time.Since(at).Round(time.Millisecond)), ""
}

// waitSnapshot lists the fleet every 100 ms until cond holds or within
// has passed.
func waitSnapshot(ctx context.Context, c shard.Coordinator, within time.Duration, cond func(shard.Snapshot) bool) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last error
	for {
		s, err := c.Fleet().Watch(ctx, 0)
		if err == nil && cond(s) {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("not within %v (last error: %v)", within, last)
			}
			return fmt.Errorf("not within %v", within)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

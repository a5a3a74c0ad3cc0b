package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// CoordWiped: the fleet's whole Consul cluster is replaced by one rebuilt
// empty (every worker's proxy moved to it, the old cluster killed), and
// the operator recovers the fleet with admin.Operator.Recover once the
// old owners have stepped down. CoordRestored: the same, but the new
// cluster is first restored from a snapshot of the old one taken a while
// before (RunCoordinatorLosses' age), during which a worker was killed
// and restarted, so that shards moved after the snapshot.
const (
	CoordWiped    Kind = "coordinator-wiped"
	CoordRestored Kind = "coordinator-restored"
)

// ownedAfterRecovery is the runbook's promise: every shard owned again
// within 30 s of the recovery.
const ownedAfterRecovery = 30 * time.Second

// RunCoordinatorLosses replaces the fleet's Consul cluster n times (kind
// CoordWiped or CoordRestored) by a new cluster of the
// same shape, and recovers the fleet each time: after the TTL and a
// second (every worker of the old cluster has stepped down by its local
// deadline, so that no new owner starts beside it), once the workers
// rejoined the new cluster and wrote the fleet's config again, it runs
// Recover and waits until every shard is held, those that were behind in
// the new generation (a recovery that finds nothing behind raises nothing: a snapshot
// recent enough is caught up with by the rejoins' own writes). A fault
// whose shards are not all owned within 30 s records the failure in Err.
// For CoordRestored the
// snapshot is taken age before the loss, and a worker is killed and
// restarted in between. It returns the faults and the cluster the fleet
// runs on at the end. It calls t.Fatal when a cluster does not start, so
// it must run on the test's goroutine.
func RunCoordinatorLosses(ctx context.Context, t testing.TB, f *Fleet, cl *consultest.Cluster, kind Kind, n int, age time.Duration, tm Timing) ([]Fault, *consultest.Cluster) {
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
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		var snap []byte
		if kind == CoordRestored {
			snap, err = saveSnapshot(ctx, cl)
			if err != nil {
				faults = append(faults, Fault{Kind: kind, Target: "the Consul cluster", Start: time.Now(), End: time.Now(), Err: err.Error()})
				continue
			}
			moved := f.Workers[i%len(f.Workers)]
			if err := moved.kill9(); err == nil {
				_ = moved.start()
			}
			sleepCtx(ctx, age)
		}
		next := consultest.StartCluster(t, len(cl.Agents))
		next.StartClients(t, len(cl.Clients))
		ft := Fault{Kind: kind, Target: "the Consul cluster", Victims: victims, Start: time.Now()}
		var restoredAt uint64
		if snap != nil {
			if restoredAt, err = restoreSnapshot(ctx, next, snap); err != nil {
				ft.Err = err.Error()
			}
		}
		for i, w := range f.Workers {
			w.Proxy.(*Proxy).Retarget(next.Clients[i%len(next.Clients)].HTTPAddr)
		}
		for _, a := range append(append([]*consultest.Agent{}, cl.Clients...), cl.Agents...) {
			a.Kill(t)
		}
		cl = next
		f.useCluster(next)
		if ft.Err == "" {
			ft.Detail, ft.Err = f.recoverAfterLoss(ctx, next, store, restoredAt, tm)
		}
		ft.End = time.Now()
		faults = append(faults, ft)
		sleepCtx(ctx, tm.Settle)
	}
	return faults, cl
}

// saveSnapshot takes a snapshot of the cluster's state (consul snapshot
// save), from its leader.
func saveSnapshot(ctx context.Context, cl *consultest.Cluster) ([]byte, error) {
	c, err := api.NewClient(cl.Agents[0].Config())
	if err != nil {
		return nil, err
	}
	rc, _, err := c.Snapshot().Save((&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("saving a snapshot: %w", err)
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// restoreSnapshot restores snap into the cluster (consul snapshot
// restore) and returns the cluster's index just after: every session
// created at or before it came from the snapshot.
func restoreSnapshot(ctx context.Context, cl *consultest.Cluster, snap []byte) (uint64, error) {
	c, err := api.NewClient(cl.Agents[0].Config())
	if err != nil {
		return 0, err
	}
	if err := c.Snapshot().Restore((&api.WriteOptions{}).WithContext(ctx), bytes.NewReader(snap)); err != nil {
		return 0, fmt.Errorf("restoring the snapshot: %w", err)
	}
	_, meta, err := c.Session().List((&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return 0, fmt.Errorf("reading the index after the restore: %w", err)
	}
	return meta.LastIndex, nil
}

// restoredSessionsGone waits until the cluster holds no session created
// at or before restoredAt: the snapshot's sessions, bound to nodes the new
// cluster does not have, which Consul ends at its next reconcile (about a
// minute). Until then they hold the snapshot's locks and member keys.
func restoredSessionsGone(ctx context.Context, cl *consultest.Cluster, restoredAt uint64, within time.Duration) error {
	c, err := api.NewClient(cl.Agents[0].Config())
	if err != nil {
		return err
	}
	deadline := time.Now().Add(within)
	for {
		list, _, err := c.Session().List((&api.QueryOptions{}).WithContext(ctx))
		left := 0
		for _, se := range list {
			if se.CreateIndex <= restoredAt {
				left++
			}
		}
		if err == nil && left == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%d sessions of the snapshot still there after %v (last error: %v)", left, within, err)
		}
		sleepCtx(ctx, 500*time.Millisecond)
	}
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
// past the old owners' step-down (and, after a restore, for the snapshot's
// sessions to end: restoredAt > 0), wait for the workers to rejoin, recover,
// and wait for every shard to be owned; it says what it saw, or what went
// wrong.
func (f *Fleet) recoverAfterLoss(ctx context.Context, cl *consultest.Cluster, store *postgres.Store, restoredAt uint64, tm Timing) (detail, problem string) {
	sleepCtx(ctx, tm.TTL+time.Second)
	if restoredAt > 0 {
		// The runbook's step after a restore into new nodes: wait until
		// Consul has ended the snapshot's sessions.
		if err := restoredSessionsGone(ctx, cl, restoredAt, 3*time.Minute); err != nil {
			return "", err.Error()
		}
	}
	op, c, err := f.operator(cl)
	if err != nil {
		return "", err.Error()
	}
	defer c.Close()
	rejoined := func(s shard.Snapshot) bool {
		live := 0
		for _, m := range s.Members {
			if m.Live() {
				live++
			}
		}
		return s.Config != nil && live == len(f.Workers)
	}
	// A cluster restored from a snapshot refuses new sessions until its
	// leader has registered the new nodes' health checks again (Consul
	// reconciles its catalog with its members every minute), and a worker
	// restarted since the snapshot waits for its restored session to go.
	if err := waitSnapshot(ctx, c, 3*time.Minute, rejoined); err != nil {
		return "", "the workers did not rejoin the new cluster: " + err.Error() + "; then: " + describeOwnership(ctx, c)
	}
	r, err := op.Recover(ctx, store, false)
	if err != nil {
		return "", "recovery: " + err.Error()
	}
	at := time.Now()
	owned := func(s shard.Snapshot) bool { return admin.Recovered(s, r) }
	if err := waitSnapshot(ctx, c, ownedAfterRecovery, owned); err != nil {
		return "", fmt.Sprintf("not every shard owned within %v of the recovery (%+v): %v; then: %s", ownedAfterRecovery, r, err, describeOwnership(ctx, c))
	}
	// A rebuilt Consul lost the fleet's policy, a restored one has the
	// snapshot's: the operator stores it again.
	if err := f.StoreStandbys(ctx, op); err != nil {
		return "", err.Error()
	}
	if !r.Raised {
		// The coordinator's index had already passed every floor (a
		// snapshot only seconds old, and the rejoins' writes since): the
		// recovery says there is nothing to do, and the fleet runs.
		return fmt.Sprintf("nothing behind (generation %d, highest token in the store %d): every shard owned %v after the check",
			r.From, r.Highest, time.Since(at).Round(time.Millisecond)), ""
	}
	return fmt.Sprintf("generation %d → %d, %d of %d shards behind; every shard owned %v after the recovery",
		r.From, r.Config.Generation, len(r.Behind), f.cfg.Shards, time.Since(at).Round(time.Millisecond)), ""
}

// operator is an operator of the fleet on cl's first server, the
// harness's own client, and its coordinator, which the caller closes.
func (f *Fleet) operator(cl *consultest.Cluster) (admin.Operator, *consul.Coordinator, error) {
	cfg := consul.DefaultConfig()
	server := cl.Agents[0]
	cfg.Address, cfg.Scheme, cfg.Token, cfg.TokenFile = server.HTTPAddr, "http", server.Token, ""
	cfg.Prefix, cfg.MemberGrace = f.cfg.Prefix, time.Hour
	c, err := consul.New(cfg)
	if err != nil {
		return admin.Operator{}, nil, err
	}
	return admin.Operator{Coordinator: c, Name: f.cfg.Prefix, By: "chaos"}, c, nil
}

// StoreStandbys stores the fleet's standbys for failover per shard
// (Config.Standbys; count balance when no policy is stored), as
// `shardctl balance -standbys K` does, trying again for up to 30 s (a
// cluster just rebuilt or restored may refuse a write or two); with none
// configured it does nothing.
func (f *Fleet) StoreStandbys(ctx context.Context, op admin.Operator) error {
	if f.cfg.Standbys == 0 {
		return nil
	}
	store := func() error {
		if _, err := op.Coordinator.Fleet().SetPolicy(ctx, shard.BalancePolicy{}, true); err != nil {
			return fmt.Errorf("storing a balance policy: %w", err)
		}
		if _, err := op.SetStandbys(ctx, f.cfg.Standbys, 0); err != nil {
			return fmt.Errorf("storing %d standbys per shard: %w", f.cfg.Standbys, err)
		}
		return nil
	}
	giveUp := time.Now().Add(30 * time.Second)
	for {
		err := store()
		if err == nil || time.Now().After(giveUp) {
			return err
		}
		if sleepCtx(ctx, 500*time.Millisecond); ctx.Err() != nil {
			return errors.Join(ctx.Err(), err)
		}
	}
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

// describeOwnership says, for a failure message, how many shards are held
// in which generation and which are not.
func describeOwnership(ctx context.Context, c shard.Coordinator) string {
	s, err := c.Fleet().Watch(ctx, 0)
	if err != nil {
		return err.Error()
	}
	byGen := map[uint32]int{}
	var free []string
	for _, st := range s.Shards {
		if st.Held() {
			byGen[st.Token.Generation()]++
		} else {
			free = append(free, fmt.Sprintf("%s (released %v by %s)", st.Shard, st.Owner.Released, st.Owner.Worker))
		}
	}
	return fmt.Sprintf("config %+v, held by generation %v, %d keys, free %v, assignor %s", s.Config, byGen, len(s.Shards), free, s.Assignor.Worker)
}

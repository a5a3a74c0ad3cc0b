package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"
)

// The baseline is what a Consul user writes without shardlease: for every
// shard, one goroutine holding one api.Lock (from
// github.com/hashicorp/consul/api) on P/<shard>, made by client.LockOpts
// with only Key and Value set, so every option is the library's default:
//
//   - one session per lock, created by the lock: TTL "15s"
//     (DefaultLockSessionTTL), Behavior release, LockDelay 15 s (the
//     session default), bound to the node's serfHealth check;
//   - LockWaitTime 15 s (each blocking query on the key), LockTryOnce false
//     (Lock blocks until acquired), MonitorRetries 0 (the first error
//     reading the key while held counts as lost), lock-delay retry 5 s
//     (DefaultLockRetryTime).
//
// Each worker runs one such goroutine for every shard, so it keeps trying
// every shard it does not hold: Lock, wait until lost or stopped, Unlock,
// and again. The lock's value is the worker's ID, which is how the
// observer tells owners apart. It never rebalances: a shard stays with
// whoever locked it first until that worker goes away.
//
// baselineLockOptions returns those options for key; --small shortens the
// session TTL to Consul's 10 s minimum and the lock-delay to 1 ms so that a
// smoke run ends sooner (its figures are not results).
func baselineLockOptions(key, workerID string, small bool) *api.LockOptions {
	o := &api.LockOptions{Key: key, Value: []byte(workerID)}
	if small {
		o.SessionTTL, o.LockDelay = "10s", time.Millisecond
	}
	return o
}

// blFleet is baseline workers in this process, each with its own Consul
// client.
type blFleet struct {
	env      *benchEnv
	prefix   string // keys are prefix/<shard>
	shards   []string
	observer *api.Client
	// observerConns is the observer's transport, closed with the fleet.
	observerConns *http.Transport

	mu      sync.Mutex
	workers map[string]*blWorker
	reaping sync.WaitGroup
	started startLog
}

func (f *blFleet) starts() *startLog { return &f.started }

type blWorker struct {
	id     string
	sev    *severable
	client *api.Client
	conns  *http.Transport
	stopCh chan struct{}
	held   atomic.Int64 // locks held (between Lock and Unlock)
	wg     sync.WaitGroup
}

// baselineShards names n shards as shardlease does: shard-000 … .
func baselineShards(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("shard-%03d", i)
	}
	return out
}

func newBLFleet(env *benchEnv, scenario string, shards int) (*blFleet, error) {
	cfg := env.apiConfig(nil)
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	return &blFleet{
		env: env, prefix: fmt.Sprintf("shardbench/%s-bl-%s", scenario, randomHex(4)),
		shards: baselineShards(shards), observer: c, observerConns: cfg.Transport, workers: map[string]*blWorker{},
	}, nil
}

// apiConfig is a fresh client config for the run's agent, with its own
// pooled transport (api.DefaultConfig's), wrapped by sev when not nil.
func (e *benchEnv) apiConfig(sev *severable) *api.Config {
	cfg := *e.consul
	cfg.Transport = api.DefaultConfig().Transport
	cfg.HttpClient = nil
	if sev != nil {
		sev.base = cfg.Transport
		cfg.HttpClient = &http.Client{Transport: sev}
	}
	return &cfg
}

func (f *blFleet) system() string { return systemBaseline }

func (f *blFleet) add(_ context.Context, id string) error {
	bw := &blWorker{id: id, sev: newSeverable(nil), stopCh: make(chan struct{})}
	cfg := f.env.apiConfig(bw.sev)
	c, err := api.NewClient(cfg)
	if err != nil {
		return err
	}
	bw.client, bw.conns = c, cfg.Transport
	f.mu.Lock()
	f.workers[id] = bw
	f.mu.Unlock()
	for _, s := range f.shards {
		lock, err := c.LockOpts(baselineLockOptions(f.prefix+"/"+s, id, f.env.small))
		if err != nil {
			close(bw.stopCh)
			bw.wg.Wait()
			return err
		}
		bw.wg.Add(1)
		go bw.hold(lock, func() { f.started.record(s) })
	}
	return nil
}

// hold is the naive loop: lock, keep it until lost or stopped, again.
func (bw *blWorker) hold(lock *api.Lock, started func()) {
	defer bw.wg.Done()
	for {
		lost, err := lock.Lock(bw.stopCh)
		if err != nil {
			// Consul unreachable or similar: try again in a second.
			select {
			case <-time.After(time.Second):
				continue
			case <-bw.stopCh:
				return
			}
		}
		if lost == nil {
			return // stopped while waiting
		}
		bw.held.Add(1)
		started()
		select {
		case <-lost:
		case <-bw.stopCh:
		}
		_ = lock.Unlock()
		bw.held.Add(-1)
		select {
		case <-bw.stopCh:
			return
		default:
		}
	}
}

// take removes worker id from the fleet and returns it (nil if none).
func (f *blFleet) take(id string) *blWorker { return takeWorker(&f.mu, f.workers, id) }

func (f *blFleet) crash(id string) {
	bw := f.take(id)
	if bw == nil {
		return
	}
	bw.sev.sever()
	close(bw.stopCh) // its goroutines now fail every call and end
	if f.env.small {
		f.invalidateHeld(id)
	}
	f.reaping.Add(1)
	go func() { defer f.reaping.Done(); bw.wg.Wait(); bw.conns.CloseIdleConnections() }()
}

// stop unlocks every held lock (each Unlock releases the key and, through
// the lock's renewer, destroys its session). The goroutines still waiting
// in Lock would notice only when their blocking query returns, up to
// LockWaitTime (15 s) later; once the held locks are released their
// requests are cut instead, so that a run does not wait for them. That
// leaves those waiting sessions (which hold nothing) to expire by TTL.
func (f *blFleet) stop(id string) <-chan struct{} {
	done := make(chan struct{})
	bw := f.take(id)
	if bw == nil {
		close(done)
		return done
	}
	close(bw.stopCh)
	go func() {
		defer close(done)
		for deadline := time.Now().Add(10 * time.Second); bw.held.Load() > 0 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond) // a Lock that was just granting
		for bw.held.Load() > 0 {
			time.Sleep(5 * time.Millisecond)
		}
		bw.sev.sever()
		bw.wg.Wait()
		bw.conns.CloseIdleConnections()
	}()
	return done
}

// invalidateHeld destroys, as an operator could, the sessions holding
// worker id's locks. Only --small uses it: an abandoned session's 10 s TTL
// takes Consul 20 s to act on (it waits twice the TTL), too long for a
// smoke run; a destroyed session is invalidated at once, lock-delay and
// all, so the takeover path is the same.
func (f *blFleet) invalidateHeld(id string) {
	pairs, _, err := f.observer.KV().List(f.prefix+"/", nil)
	if err != nil {
		return // the scenario then waits for the TTL, as in a full run
	}
	for _, p := range pairs {
		if p.Session != "" && string(p.Value) == id {
			_, _ = f.observer.Session().Destroy(p.Session, nil)
		}
	}
}

func (f *blFleet) view(ctx context.Context, after uint64) (view, error) {
	q := (&api.QueryOptions{WaitIndex: after, WaitTime: time.Minute}).WithContext(ctx)
	pairs, meta, err := f.observer.KV().List(f.prefix+"/", q)
	if err != nil {
		return view{}, err
	}
	v := view{index: meta.LastIndex, owners: map[string]string{}}
	for _, p := range pairs {
		if p.Session != "" {
			v.owners[p.Key[len(f.prefix)+1:]] = string(p.Value)
		}
	}
	f.mu.Lock()
	for id := range f.workers {
		v.members = append(v.members, id)
	}
	f.mu.Unlock()
	return v, nil
}

func (f *blFleet) close() {
	stopEvery(&f.mu, f.workers, f.stop)
	f.reaping.Wait()
	_, _ = f.observer.KV().DeleteTree(f.prefix+"/", nil)
	f.observerConns.CloseIdleConnections()
}

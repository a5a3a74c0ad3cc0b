package apilock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"
)

// DefaultLockOptions are the default baseline's options for a shard's
// lock: only Key and Value set, so every other option is the library's
// default:
//
//   - one session per lock, created by the lock: TTL "15s"
//     (DefaultLockSessionTTL), Behavior release, LockDelay 15 s (the
//     session default), bound to the node's serfHealth check;
//   - LockWaitTime 15 s (each blocking query on the key), LockTryOnce false
//     (Lock blocks until acquired), MonitorRetries 0 (the first error
//     reading the key while held counts as lost), lock-delay retry 5 s
//     (DefaultLockRetryTime).
//
// quick shortens the session TTL to Consul's 10 s minimum and the
// lock-delay to 1 ms (Config.Quick).
func DefaultLockOptions(key, workerID string, quick bool) *api.LockOptions {
	o := &api.LockOptions{Key: key, Value: []byte(workerID)}
	if quick {
		o.SessionTTL, o.LockDelay = "10s", time.Millisecond
	}
	return o
}

// runDefault runs one goroutine per shard, each keeping its lock or
// waiting for it, until ctx ends.
func runDefault(ctx context.Context, c *api.Client, cfg Config, sev *Severable) {
	stopCh := make(chan struct{})
	var held atomic.Int64 // locks held (between Lock and Unlock)
	var wg sync.WaitGroup
	for _, s := range cfg.Shards {
		lock, err := c.LockOpts(DefaultLockOptions(ShardKey(cfg.Prefix, s), cfg.ID, cfg.Quick))
		if err != nil {
			continue // only a bad key or TTL, which ShardKey and the options rule out
		}
		wg.Go(func() { hold(lock, stopCh, &held, func() func() { return cfg.started(s) }) })
	}
	<-ctx.Done()
	close(stopCh)
	// Each held lock's goroutine unlocks it (a release, and, through the
	// lock's renewer, its session destroyed). The goroutines still waiting
	// in Lock would notice only when their blocking query returns, up to
	// LockWaitTime (15 s) later; once the held locks are released their
	// requests are cut instead. Their sessions, which hold nothing, then
	// expire by TTL.
	for deadline := time.Now().Add(10 * time.Second); held.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a Lock that was just granting
	for held.Load() > 0 {
		time.Sleep(5 * time.Millisecond)
	}
	sev.Sever()
	wg.Wait()
}

// hold is the naive loop: lock, keep it until lost or stopped, again.
func hold(lock *api.Lock, stopCh <-chan struct{}, held *atomic.Int64, start func() func()) {
	for {
		lost, err := lock.Lock(stopCh)
		if err != nil {
			// Consul unreachable or similar: try again in a second.
			select {
			case <-time.After(time.Second):
				continue
			case <-stopCh:
				return
			}
		}
		if lost == nil {
			return // stopped while waiting
		}
		held.Add(1)
		stopped := start()
		select {
		case <-lost:
		case <-stopCh:
		}
		stopped()
		_ = lock.Unlock()
		held.Add(-1)
		select {
		case <-stopCh:
			return
		default:
		}
	}
}

package apilock

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
	"go.uber.org/zap"
)

// tryWait is a tuned try's LockWaitTime: a shard another session took
// meanwhile is given up after this long, not waited for.
const tryWait = 50 * time.Millisecond

// runTuned runs terms, each on a new session, until ctx ends. A term ends
// when its session is lost or the agent cannot be reached; the next one
// starts after a jittered, doubling backoff.
func runTuned(ctx context.Context, c *api.Client, cfg Config, log *zap.Logger) {
	backoff := 100 * time.Millisecond
	for {
		err := runTerm(ctx, c, cfg)
		if ctx.Err() != nil {
			return
		}
		log.Warn("term ended; starting over with a new session", zap.Error(err))
		select {
		case <-time.After(jitter(backoff)):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// term is one session's life: the locks it holds and their work.
type term struct {
	c       *api.Client
	cfg     Config
	session string
	ctx     context.Context
	wg      sync.WaitGroup

	mu      sync.Mutex
	runners []*runner // in the order acquired
}

// runner is one held shard.
type runner struct {
	shard     string
	release   chan struct{}
	releasing bool // guarded by term.mu
}

// runTerm opens a session, joins as a member and keeps up to ⌈N/W⌉ shards
// until ctx ends or the session is lost; it then releases what it holds.
func runTerm(ctx context.Context, c *api.Client, cfg Config) error {
	session, check, err := openSession(ctx, c, cfg)
	if err != nil {
		return err
	}
	tctx, end := context.WithCancelCause(ctx)
	t := &term{c: c, cfg: cfg, session: session, ctx: tctx}
	var member *api.Lock
	defer func() {
		// The work stops and the shards are released first, then the
		// member key, then the session and its check.
		end(nil)
		t.wg.Wait()
		if member != nil {
			_ = member.Unlock()
		}
		closeSession(c, session, check)
	}()
	go keepPassing(tctx, c, cfg, check, end)

	key := memberKey(cfg.Prefix, cfg.ID)
	m, err := c.LockOpts(&api.LockOptions{Key: key, Value: []byte(cfg.ID), Session: session, LockTryOnce: true, LockWaitTime: time.Second})
	if err != nil {
		return err
	}
	memberLost, err := m.Lock(tctx.Done())
	if err != nil || memberLost == nil {
		return fmt.Errorf("apilock: member key %s not acquired: %v", key, err)
	}
	member = m
	go func() {
		select {
		case <-memberLost:
			end(fmt.Errorf("%w: member key %s lost", errSessionLost, key))
		case <-tctx.Done():
		}
	}()
	err = t.manage()
	if cause := context.Cause(tctx); ctx.Err() == nil && cause != nil {
		return cause
	}
	return err
}

// manage watches the prefix with one blocking query and, on each change,
// releases the shards held beyond ⌈N/W⌉ or tries free ones up to it.
func (t *term) manage() error {
	n := len(t.cfg.Shards)
	h := fnv.New32a()
	h.Write([]byte(t.cfg.ID))
	start := t.cfg.Shards[int(h.Sum32()%uint32(n))]
	var index uint64
	for t.ctx.Err() == nil {
		q := (&api.QueryOptions{WaitIndex: index, WaitTime: time.Minute}).WithContext(t.ctx)
		pairs, meta, err := t.c.KV().List(t.cfg.Prefix+"/", q)
		if err != nil {
			if t.ctx.Err() != nil {
				return nil
			}
			// The agent is busy or away: look again shortly. The locks
			// held are the monitors' business meanwhile.
			index = 0
			select {
			case <-time.After(jitter(time.Second)):
			case <-t.ctx.Done():
			}
			continue
		}
		index = meta.LastIndex
		live, free := t.read(pairs, start)
		want := (n + live - 1) / max(live, 1)
		held := t.held()
		switch {
		case len(held) > want:
			t.releaseNewest(len(held) - want)
		case len(held) < want && len(free) > 0:
			tried := free[:min(want-len(held), len(free))]
			if got, err := t.try(tried); err != nil {
				return err
			} else if got < len(tried) {
				index = 0 // refused or taken meanwhile: look again at once (a refusal waited a lock-delay)
			}
		}
	}
	return nil
}

// read counts the live members (member keys held) and lists the free
// shards other than this worker's own, in the order this worker tries
// them: from start on, wrapping around.
func (t *term) read(pairs api.KVPairs, start string) (live int, free []string) {
	held := map[string]bool{}
	for _, p := range pairs {
		switch {
		case strings.HasPrefix(p.Key, membersPrefix(t.cfg.Prefix)):
			if p.Session != "" {
				live++
			}
		case strings.HasPrefix(p.Key, ShardsPrefix(t.cfg.Prefix)) && p.Session != "":
			held[strings.TrimPrefix(p.Key, ShardsPrefix(t.cfg.Prefix))] = true
		}
	}
	mine := map[string]bool{}
	for _, s := range t.held() {
		mine[s] = true
	}
	for _, s := range t.cfg.Shards {
		if !held[s] && !mine[s] {
			free = append(free, s)
		}
	}
	i, _ := slices.BinarySearch(free, start)
	return live, append(free[i:], free[:i]...)
}

// held lists the shards this term holds and does not release, in the
// order acquired.
func (t *term) held() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, r := range t.runners {
		if !r.releasing {
			out = append(out, r.shard)
		}
	}
	return out
}

// releaseNewest releases the k shards acquired last.
func (t *term) releaseNewest(k int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.runners) - 1; i >= 0 && k > 0; i-- {
		if r := t.runners[i]; !r.releasing {
			r.releasing = true
			close(r.release)
			k--
		}
	}
}

// try tries to lock every shard of shards at once and runs those it gets.
// A try refused because of a lock-delay ends one lock-delay after it began
// (api.Lock would wait DefaultLockRetryTime, 5 s); one that finds the
// shard taken ends after tryWait. It returns how many it got, and the
// first error a try returned.
func (t *term) try(shards []string) (int, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	got, errs := 0, []error{}
	for _, s := range shards {
		wg.Go(func() {
			lock, err := t.c.LockOpts(&api.LockOptions{Key: ShardKey(t.cfg.Prefix, s), Value: []byte(t.cfg.ID), Session: t.session,
				LockTryOnce: true, LockWaitTime: tryWait})
			if err == nil {
				ctx, cancel := context.WithTimeout(t.ctx, max(t.cfg.LockDelay, tryWait))
				var lost <-chan struct{}
				lost, err = lock.Lock(ctx.Done())
				cancel()
				if lost != nil {
					t.run(s, lock, lost)
					mu.Lock()
					got++
					mu.Unlock()
				}
			}
			if err != nil && !errors.Is(err, api.ErrLockHeld) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("apilock: locking %s: %w", s, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return got, errs[0]
	}
	return got, nil
}

// run starts shard's work and keeps the lock until it is lost, released
// or the term ends; then it stops the work and unlocks.
func (t *term) run(shard string, lock *api.Lock, lost <-chan struct{}) {
	stopped := t.cfg.started(shard)
	r := &runner{shard: shard, release: make(chan struct{})}
	t.mu.Lock()
	t.runners = append(t.runners, r)
	t.mu.Unlock()
	t.wg.Go(func() {
		select {
		case <-lost:
		case <-r.release:
		case <-t.ctx.Done():
		}
		stopped()
		_ = lock.Unlock()
		t.mu.Lock()
		t.runners = slices.DeleteFunc(t.runners, func(x *runner) bool { return x == r })
		t.mu.Unlock()
	})
}

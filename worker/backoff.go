package worker

import (
	"math/rand/v2"
	"sync"
	"time"
)

// jitter is the worker's one source of randomness, shared by its goroutines.
type jitter struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func newJitter(seed uint64) *jitter {
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &jitter{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// between returns a duration uniformly in [lo, hi).
func (j *jitter) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return lo + time.Duration(j.rng.Int64N(int64(hi-lo)))
}

// upTo returns a duration uniformly in [0, d): shard.FollowOptions.Jitter,
// so the worker's follows draw from its seeded source and a simulated
// fleet replays their waits.
func (j *jitter) upTo(d time.Duration) time.Duration { return j.between(0, d) }

// around returns d ± 50 %.
func (j *jitter) around(d time.Duration) time.Duration { return j.between(d/2, d+d/2) }

// backoff is capped exponential backoff with full jitter: attempt n waits a
// random duration in [0, min(max, base·2ⁿ)), so retries of many workers spread
// out instead of arriving together.
type backoff struct {
	base, max time.Duration
	attempt   int
	j         *jitter
}

func (b *backoff) next() time.Duration {
	ceil := b.base << min(b.attempt, 20)
	if ceil > b.max || ceil <= 0 {
		ceil = b.max
	}
	b.attempt++
	return b.j.between(ceil/4, ceil)
}

func (b *backoff) reset() { b.attempt = 0 }

// sleepCtx waits for d or until ctx ends; it reports whether d passed.
func sleepCtx(ctxDone <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctxDone:
		return false
	}
}

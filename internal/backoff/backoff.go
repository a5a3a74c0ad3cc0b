package backoff

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Jitter is one owner's source of randomness, shared by its goroutines.
type Jitter struct {
	mu  sync.Mutex
	rng *rand.Rand
}

// NewJitter returns a Jitter seeded with seed; 0 picks a random seed.
func NewJitter(seed uint64) *Jitter {
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &Jitter{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Between returns a duration uniformly in [lo, hi).
func (j *Jitter) Between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return lo + time.Duration(j.rng.Int64N(int64(hi-lo)))
}

// UpTo returns a duration uniformly in [0, d): shard.FollowOptions.Jitter,
// so a worker's follows draw from its seeded source and a simulated fleet
// replays their waits.
func (j *Jitter) UpTo(d time.Duration) time.Duration { return j.Between(0, d) }

// Backoff is capped exponential backoff with jitter: attempt n waits a
// random duration in [c/4, c), c = min(Max, Base·2ⁿ).
type Backoff struct {
	Base, Max time.Duration
	J         *Jitter
	attempt   int
}

// Next returns the wait before the next attempt.
func (b *Backoff) Next() time.Duration {
	ceil := b.Base << min(b.attempt, 20)
	if ceil > b.Max || ceil <= 0 {
		ceil = b.Max
	}
	b.attempt++
	return b.J.Between(ceil/4, ceil)
}

// Reset starts the backoff over, after a success.
func (b *Backoff) Reset() { b.attempt = 0 }

// Sleep waits for d or until done is closed; it reports whether d passed.
func Sleep(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

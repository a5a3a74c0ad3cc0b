package freeporttest

import (
	"sync"

	"github.com/shardlease/shardlease/internal/freeport"
)

// Rigged is a picker for tests of a caller's retry: its first Times calls
// return freeport.Pick's ports with Taken (a port the test holds) in place
// of the one at index At, as if another process took that port between the
// pick and the bind; later calls are freeport.Pick's. Safe for concurrent
// use.
type Rigged struct {
	Taken, At, Times int

	mu    sync.Mutex
	calls int
}

// Pick is the rigged freeport.Pick.
func (r *Rigged) Pick(n int) ([]int, error) {
	r.mu.Lock()
	r.calls++
	rig := r.calls <= r.Times
	r.mu.Unlock()
	ports, err := freeport.Pick(n)
	if err == nil && rig {
		ports[r.At] = r.Taken
	}
	return ports, err
}

// Calls is how many times Pick was called.
func (r *Rigged) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

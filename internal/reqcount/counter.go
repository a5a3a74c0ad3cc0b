package reqcount

import (
	"maps"
	"sync"
)

// Counter counts requests by name. Safe for concurrent use; the zero
// value is ready.
type Counter struct {
	mu     sync.Mutex
	total  int64
	counts map[string]int64
}

// Add counts one request named name.
func (c *Counter) Add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = make(map[string]int64)
	}
	c.total++
	c.counts[name]++
}

// Total returns the number of requests counted so far.
func (c *Counter) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Counts returns a copy of the counts by name.
func (c *Counter) Counts() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// Reset sets every count back to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total, c.counts = 0, nil
}

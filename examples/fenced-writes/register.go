package main

import (
	"fmt"
	"sync"

	"github.com/shardlease/shardlease/shard"
)

// register is the shared storage of the story: one value, and the highest
// fencing token it has accepted. A write with a lower token comes from an
// owner that has been superseded and is rejected. The check and the write
// are one step (under one lock), as they must be in any fenced store; in
// production this is a conditional UPDATE, a compare-and-set, or the
// offsets stores of package offsets.
type register struct {
	mu      sync.Mutex
	value   string
	highest shard.Token
}

// write stores value if token is not below the highest token seen. It
// returns the outcome as the transcript prints it.
func (r *register) write(token shard.Token, value string) (accepted bool, outcome string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token < r.highest {
		return false, fmt.Sprintf("rejected: stale token %d < %d", token, r.highest)
	}
	r.highest, r.value = token, value
	return true, "accepted"
}

func (r *register) read() (string, shard.Token) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.value, r.highest
}

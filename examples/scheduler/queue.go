package main

import (
	"fmt"
	"sync"

	"github.com/shardlease/shardlease/shard"
)

// queue is the job queue the scheduler feeds. It accepts each idempotency
// key once: a second enqueue of the same key is refused and reported as a
// duplicate, whoever sends it. This, not the lock, is what makes a retry
// after a crash harmless: a leader may die after enqueueing a job and
// before recording that it did.
type queue struct {
	mu    sync.Mutex
	by    map[string]shard.Token // key → token of the term that enqueued it
	order []string
	dups  int
}

func newQueue() *queue { return &queue{by: map[string]shard.Token{}} }

// enqueue adds the job with key unless it is queued already.
func (q *queue) enqueue(key string, token shard.Token) (accepted bool, outcome string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if by, ok := q.by[key]; ok {
		q.dups++
		return false, fmt.Sprintf("duplicate, already queued by token %d", by)
	}
	q.by[key] = token
	q.order = append(q.order, key)
	return true, "queued"
}

func (q *queue) contents() (keys []string, by map[string]shard.Token, dups int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	by = make(map[string]shard.Token, len(q.by))
	for k, v := range q.by {
		by[k] = v
	}
	return append([]string(nil), q.order...), by, q.dups
}

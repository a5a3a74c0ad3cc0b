package main

import (
	"sync"

	"github.com/shardlease/shardlease/shard"
)

// sink is where processed messages land: it counts how many times each
// message (shard, offset) was processed, so the end of the run can tell
// lost messages (0) from reprocessed ones (2 or more).
type sink struct {
	mu     sync.Mutex
	length int64
	seen   map[shard.ID][]uint8
	next   map[shard.ID]int64 // one past the highest offset processed
	total  int64              // every processing, repeats included
}

func newSink(ids []shard.ID, length int64) *sink {
	s := &sink{length: length, seen: make(map[shard.ID][]uint8, len(ids)), next: make(map[shard.ID]int64, len(ids))}
	for _, id := range ids {
		s.seen[id] = make([]uint8, length)
	}
	return s
}

// process handles message off of shard id.
func (s *sink) process(id shard.ID, off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[id][off] < 255 {
		s.seen[id][off]++
	}
	s.next[id] = max(s.next[id], off+1)
	s.total++
}

func (s *sink) processed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

func (s *sink) highest(id shard.ID) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next[id]
}

// tally counts the messages never processed and those processed more
// than once (each extra time counted).
func (s *sink) tally() (lost, repeats int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, counts := range s.seen {
		for _, n := range counts {
			switch {
			case n == 0:
				lost++
			case n > 1:
				repeats += int64(n - 1)
			}
		}
	}
	return lost, repeats
}

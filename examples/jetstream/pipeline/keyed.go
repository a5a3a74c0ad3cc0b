package pipeline

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Layout is a run of the stream's partitions: Count of them from
// partition First, on subjects Subject(First) …. Partition numbers are
// the stream's, one space for every layout, so a layout a reshard added
// has subjects of its own (as a shard of a later layout has an index of
// its own in the fleet: shard.Segment.Base).
type Layout struct{ First, Count int }

// Of is key k's partition in l: First + Hash(k) mod Count. Under this
// placement a reshard of lineage shard.LineageMod sends a key from parent
// p to a child of p: Hash(k) mod N and Hash(k) mod M agree modulo
// gcd(N, M).
func (l Layout) Of(k int64) int { return l.First + int(Hash(k)%uint64(l.Count)) }

// Contains reports whether p is one of l's partitions.
func (l Layout) Contains(p int) bool { return l.First <= p && p < l.First+l.Count }

// Last is l's last partition.
func (l Layout) Last() int { return l.First + l.Count - 1 }

// Hash is key k's hash: 64-bit FNV-1a of its eight bytes, big-endian.
func Hash(k int64) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(k))
	h.Write(b[:]) //nolint:errcheck // a hash.Hash never fails to write
	return h.Sum64()
}

// ChooseKeys returns the order ids a Keyed producer publishes: 1, 2, …
// in order, each kept if a partition it falls in, in one of the layouts,
// still has fewer than per keys, until every partition of every layout
// has per at least. Layouts must have a Count of 1 or more.
func ChooseKeys(per int, layouts ...Layout) []int64 {
	type slot struct{ layout, partition int }
	short := 0 // partitions with fewer than per keys
	for _, l := range layouts {
		short += l.Count
	}
	if per < 1 {
		return nil
	}
	have := map[slot]int{}
	var keys []int64
	for k := int64(1); short > 0; k++ {
		keep := false
		for i, l := range layouts {
			keep = keep || have[slot{i, l.Of(k)}] < per
		}
		if !keep {
			continue
		}
		keys = append(keys, k)
		for i, l := range layouts {
			s := slot{i, l.Of(k)}
			if have[s]++; have[s] == per {
				short--
			}
		}
	}
	return keys
}

// Keyed publishes keyed events in rounds, as Produce does: one event to
// every partition of the current layout a round, one round every Pace.
// Partition p's event is of the next of its keys in turn (the keys whose
// partition is p) and carries that key's next sequence number, so each
// key's events are numbered 1, 2, … across partitions. It starts on From;
// told to switch, it waits for every round in flight, publishes a marker
// to every partition of From (the partition's end: nothing follows it
// there), waits for those too, and goes on with To, where each key has
// its partition under To. A key's events are thus stored in their
// order, before and after the switch.
type Keyed struct {
	JS       jetstream.JetStream
	Keys     []int64
	From, To Layout
	Pace     time.Duration
	// Rounds is how many rounds it publishes at least, Tail how many at
	// least after the switch; it does not end before it switched.
	Rounds, Tail int64
	// Switch, once closed, makes it switch before its next round.
	Switch <-chan struct{}
	// After, if set, is called after each round is acknowledged, with
	// the rounds acknowledged so far; Switched, once the markers are,
	// with the rounds published before them.
	After    func(round int64)
	Switched func(round int64)
}

// Run publishes until its rounds are done, or ctx ends, and returns the
// messages published (events and markers): without an error, every one
// of them is stored.
func (k *Keyed) Run(ctx context.Context) (int64, error) {
	keysOf := map[int][]int64{}
	for _, key := range k.Keys {
		keysOf[k.From.Of(key)] = append(keysOf[k.From.Of(key)], key)
		keysOf[k.To.Of(key)] = append(keysOf[k.To.Of(key)], key)
	}
	for _, l := range []Layout{k.From, k.To} {
		for p := l.First; p <= l.Last(); p++ {
			if len(keysOf[p]) == 0 {
				return 0, fmt.Errorf("pipeline: partition %d has none of the %d keys (ChooseKeys gives every partition some)", p, len(k.Keys))
			}
		}
	}
	n := map[int]int64{}     // events (and marker) published to each partition
	seq := map[int64]int64{} // events published of each key
	cur, switched, at := k.From, false, int64(0)
	var stored int64
	f := flight{after: k.After}
	began := time.Now()
	for round := int64(1); ; round++ {
		if !switched && isClosed(k.Switch) {
			if err := f.drain(ctx); err != nil {
				return stored, err
			}
			acks := make([]jetstream.PubAckFuture, 0, k.From.Count)
			for p := k.From.First; p <= k.From.Last(); p++ {
				n[p]++
				a, err := publish(k.JS, Event{Partition: p, N: n[p], PublishedNs: time.Now().UnixNano(), Marker: true})
				if err != nil {
					return stored, err
				}
				acks = append(acks, a)
			}
			if err := acked(ctx, round, acks); err != nil {
				return stored, err
			}
			stored += int64(len(acks))
			cur, switched, at = k.To, true, round-1
			if k.Switched != nil {
				k.Switched(at)
			}
		}
		if done := round - 1; done >= k.Rounds && switched && done-at >= k.Tail {
			break
		}
		acks := make([]jetstream.PubAckFuture, 0, cur.Count)
		for p := cur.First; p <= cur.Last(); p++ {
			keys := keysOf[p]
			key := keys[n[p]%int64(len(keys))]
			n[p]++
			seq[key]++
			a, err := publish(k.JS, Event{Partition: p, N: n[p], PublishedNs: time.Now().UnixNano(), Key: key, KeySeq: seq[key]})
			if err != nil {
				return stored, err
			}
			acks = append(acks, a)
		}
		if err := f.add(ctx, round, acks); err != nil {
			return stored, err
		}
		stored += int64(len(acks))
		if k.Pace > 0 && !Sleep(ctx, time.Until(began.Add(time.Duration(round)*k.Pace))) {
			return stored, context.Cause(ctx)
		}
	}
	return stored, f.drain(ctx)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

package fleetkeys

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// BenchmarkDecode decodes the listing of a fleet of 1,000 workers that
// each hold and are assigned 100 of 100,000 shards, as an assignor and an
// observer do on every change: the same listing again (nothing decoded
// has changed), and the listing after one worker's hundred locks moved.
//
//	go test -run '^$' -bench Decode -benchmem ./internal/fleetkeys
func BenchmarkDecode(b *testing.B) {
	const workers, shards = 1000, 100_000
	pairs, d := largeListing(b, workers, shards)
	b.Run("unchanged", func(b *testing.B) {
		d.Decode(pairs, 1)
		for b.Loop() {
			d.Decode(pairs, 1)
		}
	})
	b.Run("one worker's locks moved", func(b *testing.B) {
		d.Decode(pairs, 1)
		moved := slices.Clone(pairs)
		for i := range 100 {
			p := *moved[i]
			p.Index++
			moved[i] = &p
		}
		for n := 0; b.Loop(); n++ {
			if n%2 == 0 {
				d.Decode(moved, 2)
			} else {
				d.Decode(pairs, 1)
			}
		}
	})
}

// largeListing is the sorted listing of a fleet of workers × shards, every
// shard held by its worker and in its sealed assignment, and its decoder.
func largeListing(b *testing.B, workers, shards int) ([]*Pair, *Decoder) {
	b.Helper()
	layout := NewLayout("bench")
	d := NewDecoder(layout, func(key string, _ []byte) string { return "put " + key })
	cfg, value, err := ConfigValue(shard.Config{Shards: shards})
	if err != nil {
		b.Fatal(err)
	}
	d.SetFleet(cfg)
	pairs := []*Pair{{Key: layout.Config(), Value: value, Index: 1}}
	ids := cfg.IDs()
	set := map[string]*shard.Assignment{}
	since := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	per := shards / workers
	for w := range workers {
		worker := fmt.Sprintf("w%04d", w)
		session := shard.SessionID(fmt.Sprintf("%016x", w+1))
		member, _ := json.Marshal(shard.Member{ID: worker, Weight: 1})
		pairs = append(pairs, &Pair{Key: layout.Member(worker), Value: member, Index: 2, Session: session})
		mine := ids[w*per : (w+1)*per]
		set[worker] = &shard.Assignment{Shards: mine, Memory: []byte(`{}`)}
		for _, id := range mine {
			owner, _ := json.Marshal(shard.Owner{Worker: worker, Why: shard.Why{Reason: shard.ReasonInitial}, Since: since})
			pairs = append(pairs, &Pair{Key: layout.Shard(id), Value: owner, Index: uint64(10 + w), Session: session})
		}
	}
	sealed, err := SealAssignments(d.Fleet(), layout.Config(), shard.Token(5), set)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range sealed {
		pairs = append(pairs, &Pair{Key: layout.Assign(s.Worker), Value: s.Value, Index: 3},
			&Pair{Key: layout.Memory(s.Worker), Value: s.Memory, Index: 3})
	}
	slices.SortFunc(pairs, func(a, b *Pair) int { return strings.Compare(a.Key, b.Key) })
	snap := d.Decode(pairs, 1)
	if len(snap.Problems) > 0 || len(snap.Shards) != shards || len(snap.Members) != workers || len(snap.Assignments) != workers {
		b.Fatalf("the listing decodes to %d shards, %d members, %d assignments, problems %q", len(snap.Shards), len(snap.Members), len(snap.Assignments), snap.Problems[:min(3, len(snap.Problems))])
	}
	return pairs, d
}

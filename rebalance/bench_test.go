package rebalance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// BenchmarkCompute plans fleets of 128 shards × 12 workers and 4096 × 64 in
// four states: steady (converged: the usual case on every watch wake-up),
// join and leave (one member more or fewer than a converged fleet), and cold
// (nothing held: every shard placed by rendezvous, the worst case).
func BenchmarkCompute(b *testing.B) {
	for _, size := range []struct{ shards, workers int }{{128, 12}, {4096, 64}} {
		r := rand.New(rand.NewPCG(1, 2))
		cold := Input{Shards: shard.Config{Shards: size.shards}.IDs(), Members: genMembers(r, size.workers)}
		p, err := Compute(cold)
		if err != nil {
			b.Fatal(err)
		}
		steady := converged(cold, p)
		join := steady
		join.Members = append(join.Members[:size.workers:size.workers], Member{ID: "joiner", Weight: 1})
		leave := steady
		leave.Members = steady.Members[1:]
		for _, state := range []struct {
			name string
			in   Input
		}{{"steady", steady}, {"join", join}, {"leave", leave}, {"cold", cold}} {
			b.Run(fmt.Sprintf("%dx%d/%s", size.shards, size.workers, state.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Compute(state.in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkStep runs the assignor's step on a fleet of 1,000 workers and
// 100,000 shards: cold (nothing held or assigned: every shard placed),
// steady (converged: the step on every wake-up), join (one member more than
// a converged fleet) and leave (one fewer: its shards orphaned). The states
// are built as the assignor reads them: the shard set is a Config's IDs,
// every assignment key is decoded on its own (shard.Config.DecodeSet) and
// the holders come from a listing of the lock keys, so no two of them share
// strings.
func BenchmarkStep(b *testing.B) {
	const workers, shards = 1000, 100_000
	f := newFleet(rand.New(rand.NewPCG(1, 2)), workers, shards)
	cold := asRead(b, f.snapshot())
	if _, _, err := f.settle(Policy{}, 100*time.Millisecond, 10, nil); err != nil {
		b.Fatal(err)
	}
	steady := asRead(b, f.snapshot())
	if d, err := Step(steady, Policy{}); err != nil || !quiet(d) {
		b.Fatalf("steady is not at rest: Step decides %d keys, %d moves, wake %v (err %v)", len(d.Assign), len(d.Moves), d.Wake, err)
	}
	join, leave := steady, steady // the same reading but for the members
	join.Members = append(slices.Clone(steady.Members), Member{ID: "joiner", Weight: 1, Session: "joiner#1"})
	leave.Members = steady.Members[1:]
	for _, c := range []struct {
		name string
		s    State
	}{{"cold", cold}, {"steady", steady}, {"join", join}, {"leave", leave}} {
		b.Run(fmt.Sprintf("%dx%d/%s", shards, workers, c.name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Step(c.s, Policy{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// asRead returns s with its strings as reading the coordinator makes them:
// each assignment key's shards decoded from its stored form, each shard ID
// of the lock listing a string of its own, and each holder the ID of the
// member whose session holds the lock (Holders is derived by session).
func asRead(b *testing.B, s State) State {
	cfg := shard.Config{Shards: len(s.Shards)}
	assigned := make(map[string]Assignment, len(s.Assigned))
	for w, a := range s.Assigned {
		enc, err := cfg.EncodeSet(a.Shards)
		if err != nil {
			b.Fatal(err)
		}
		if a.Shards, err = cfg.DecodeSet(enc); err != nil {
			b.Fatal(err)
		}
		assigned[w] = a
	}
	s.Assigned = assigned
	bySession := map[shard.SessionID]string{}
	for _, m := range s.Members {
		bySession[m.Session] = m.ID
	}
	session := map[string]shard.SessionID{}
	for _, m := range s.Members {
		session[m.ID] = m.Session
	}
	holders := make(map[shard.ID]string, len(s.Holders))
	for _, id := range cfg.IDs() {
		if h, ok := s.Holders[id]; ok {
			holders[id] = bySession[session[h]]
		}
	}
	s.Holders = holders
	return s
}

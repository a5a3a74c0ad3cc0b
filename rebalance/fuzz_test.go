package rebalance

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// FuzzStep: for any state Step either fails with ErrInvalidInput or returns
// a decision that passes every invariant, the same for the state in reverse
// order, and a fixed point once written; it never panics.
//
// memberSpec and shardSpec are comma-separated IDs (so empty and duplicate
// IDs occur); memberBytes gives each member 3 bytes: a weight, a draining
// bit and a session, and for its key a stuck mark (for its session or
// another) and a wait; holders picks each shard's holder (a member, a dead
// worker, or none; no holders at all: nil Holders); keys picks each shard's key (a member's, a dead
// worker's, or none) and with the top bit also member 0's (a conflict);
// clock is the time in milliseconds and sets the policy.
func FuzzStep(f *testing.F) {
	f.Add("a,b,c", []byte{1, 0, 0, 1, 2, 5, 1, 0, 0}, "s1,s2,s3,s4", []byte{0, 1, 2, 3}, []byte{0, 1, 0x82, 254}, int64(5000))
	f.Add("a,a", []byte{}, "s1", []byte{}, []byte{}, int64(0))
	f.Add(",b", []byte{}, "s1,s1", []byte{}, []byte{1}, int64(0))
	f.Add("a", []byte{0xff, 0xff, 0xff}, "s1,s2,s3", []byte{9, 9, 0xff}, []byte{0, 0x80, 3}, int64(-3))
	f.Add("x,y", []byte{3, 1, 3, 0, 0, 0}, "stream/shard-000,stream/shard-001", []byte{0, 0}, []byte{1, 1}, int64(1<<40))
	f.Add("", []byte{}, "", []byte{}, []byte{}, int64(0))
	f.Fuzz(func(t *testing.T, memberSpec string, memberBytes []byte, shardSpec string, holders, keys []byte, clock int64) {
		s, p := fuzzState(memberSpec, memberBytes, shardSpec, holders, keys, clock)
		checkFuzzStep(t, s, p)
	})
}

// FuzzStepLoad is FuzzStep with loads: loads gives each shard a byte (255:
// missing; 254: negative, an invalid input; else the byte, squared, so
// that a few shards dominate) and each key a residence mark (arrivals and
// an out-of-band mark at the clock's past or future).
func FuzzStepLoad(f *testing.F) {
	f.Add("a,b,c", []byte{1, 0, 0, 1, 2, 5, 1, 0, 0}, "s1,s2,s3,s4", []byte{0, 1, 2, 3}, []byte{0, 1, 0x82, 254}, []byte{9, 1, 1, 1}, int64(5000))
	f.Add("a,b", []byte{2, 0, 0, 1, 0, 0}, "x-0,x-1,x-2,x-3,x-4,x-5", []byte{0, 0, 0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 1}, []byte{200, 3, 2, 2, 1, 255}, int64(90_000))
	f.Add("a", []byte{}, "s1", []byte{}, []byte{}, []byte{254}, int64(0))
	f.Fuzz(func(t *testing.T, memberSpec string, memberBytes []byte, shardSpec string, holders, keys, loads []byte, clock int64) {
		s, p := fuzzState(memberSpec, memberBytes, shardSpec, holders, keys, clock)
		s.Loads = map[shard.ID]float64{}
		for i, id := range s.Shards {
			if i < len(loads) && loads[i] != 255 {
				l := float64(loads[i]) * float64(loads[i])
				if loads[i] == 254 {
					l = -1
				}
				s.Loads[id] = l
			}
		}
		for w, a := range s.Assigned {
			if len(a.Shards) > 0 && clock&8 != 0 {
				a.Arrived = map[shard.ID]time.Time{a.Shards[0]: s.Now.Add(-time.Duration(clock&0x70) * time.Second)}
				a.OutOfBand = s.Now.Add(time.Duration(clock&0x3f0-0x200) * 100 * time.Millisecond)
				s.Assigned[w] = a
			}
		}
		p.Load = LoadPolicy{Patience: time.Duration(clock&0x30) * 100 * time.Millisecond}
		checkFuzzStep(t, s, p)
	})
}

// fuzzState builds FuzzStep's state and policy from its inputs (see
// FuzzStep).
func fuzzState(memberSpec string, memberBytes []byte, shardSpec string, holders, keys []byte, clock int64) (State, Policy) {
	s := State{Now: epoch.Add(time.Duration(clock) * time.Millisecond), Assigned: map[string]Assignment{}}
	var stuckBits []byte
	if memberSpec != "" {
		for i, id := range strings.Split(memberSpec, ",") {
			m := Member{ID: id, Session: "1"}
			b := append(slices.Clone(memberBytes[min(3*i, len(memberBytes)):]), 0, 0, 0)
			m.Weight, m.Draining, m.Session = int(int8(b[0])), b[1]&1 != 0, shard.SessionID(fmt.Sprint(b[1]>>1&3))
			s.Members = append(s.Members, m)
			stuckBits = append(stuckBits, b[2])
		}
	}
	s.Shards = fuzzShards(shardSpec)
	if len(holders) > 0 {
		s.Holders = make([]string, len(s.Shards))
	}
	for i, id := range s.Shards {
		if i < len(holders) {
			s.Holders[i], _ = fuzzHolder(holders[i], s.Members)
		}
		if i < len(keys) {
			add := func(w string) {
				a := s.Assigned[w]
				a.Shards = append(a.Shards, id)
				s.Assigned[w] = a
			}
			switch k := int(keys[i] & 0x7f); {
			case k < len(s.Members):
				add(s.Members[k].ID)
			case k == 0x7e:
				add("gone")
			}
			if keys[i]&0x80 != 0 && len(s.Members) > 0 {
				add(s.Members[0].ID)
			}
		}
	}
	for i, m := range s.Members {
		a, ok := s.Assigned[m.ID]
		if !ok {
			continue
		}
		bits := stuckBits[i]
		a.Stuck = bits&1 != 0
		if a.Stuck {
			a.StuckSession = m.Session
			if bits&2 != 0 {
				a.StuckSession = "other"
			}
		}
		if a.Waiting = int(bits >> 2 & 7); a.Waiting > 0 {
			a.WaitingSince = s.Now.Add(-time.Duration(bits>>5) * 500 * time.Millisecond)
		}
		s.Assigned[m.ID] = a
	}
	p := Policy{MaxMovesInFlight: int(clock & 3), StuckAfter: time.Duration(clock&7) * 300 * time.Millisecond}
	return s, p
}

// checkFuzzStep: Step either fails with ErrInvalidInput or returns a
// decision that passes every invariant, the same for the state in reverse
// order, and a fixed point once written.
func checkFuzzStep(t *testing.T, s State, p Policy) {
	d, err := Step(s, p)
	if err != nil {
		if !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("error %v does not wrap ErrInvalidInput", err)
		}
		return
	}
	if err := checkDecision(s, p, d); err != nil {
		t.Fatal(err)
	}
	rev := s
	rev.Members, rev.Shards, rev.Holders = reversed(s.Members), reversed(s.Shards), reversed(s.Holders)
	if d2, err := Step(rev, p); err != nil || !sameDecision(d, d2) {
		t.Fatalf("reversed state gave another decision (err %v)", err)
	}
	if d3, err := Step(applied(s, d), p); err != nil || len(d3.Assign) != 0 || len(d3.Moves) != 0 || len(d3.Delete) != 0 {
		t.Fatalf("the written decision is not a fixed point: %+v (err %v)", d3, err)
	}
}

// fuzzShards splits a comma-separated list of shard IDs; "" has none.
func fuzzShards(spec string) []shard.ID {
	var ids []shard.ID
	if spec != "" {
		for _, id := range strings.Split(spec, ",") {
			ids = append(ids, shard.ID(id))
		}
	}
	return ids
}

// fuzzHolder picks a shard's holder by k: member k, "" for 255, a dead
// worker for another even k, none for an odd one.
func fuzzHolder(k byte, ms []Member) (string, bool) {
	switch {
	case int(k) < len(ms):
		return ms[k].ID, true
	case k == math.MaxUint8:
		return "", true
	case k%2 == 0:
		return "dead", true
	}
	return "", false
}

// reversed returns a reversed copy of xs.
func reversed[T any](xs []T) []T {
	ys := slices.Clone(xs)
	slices.Reverse(ys)
	return ys
}

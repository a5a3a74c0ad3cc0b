package rebalance

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// FuzzCompute: for any input Compute either fails with ErrInvalidInput or
// returns a plan that passes every invariant, and it never panics.
//
// memberSpec and shardSpec are comma-separated IDs (so empty and duplicate
// IDs occur); weights gives each member 8 bytes of weight (any int64,
// including extremes) and a draining bit; holders picks each shard's holder
// (a member, a dead worker, or none).
func FuzzCompute(f *testing.F) {
	f.Add("a,b,c", []byte{1, 0, 0, 0, 0, 0, 0, 0, 0}, "s1,s2,s3,s4", []byte{0, 1, 2, 3})
	f.Add("a,a", []byte{}, "s1", []byte{})
	f.Add(",b", []byte{}, "s1,s1", []byte{})
	f.Add("a,b", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff}, "s1,s2,s3", []byte{9, 9, 1})
	f.Add("x", []byte{0, 0, 0, 0, 0, 0, 0, 0x80, 1}, "", []byte{5})
	f.Add("", []byte{}, "", []byte{})
	f.Fuzz(func(t *testing.T, memberSpec string, weights []byte, shardSpec string, holders []byte) {
		in := Input{Owners: map[shard.ID]string{}}
		if memberSpec != "" {
			for i, id := range strings.Split(memberSpec, ",") {
				m := Member{ID: id}
				if w := weights[min(9*i, len(weights)):]; len(w) >= 9 {
					m.Weight = int(int64(binary.LittleEndian.Uint64(w)))
					m.Draining = w[8]&1 != 0
				}
				in.Members = append(in.Members, m)
			}
		}
		if shardSpec != "" {
			for _, s := range strings.Split(shardSpec, ",") {
				in.Shards = append(in.Shards, shard.ID(s))
			}
		}
		for i, s := range in.Shards {
			if i >= len(holders) {
				break
			}
			switch k := int(holders[i]); {
			case k < len(in.Members):
				in.Owners[s] = in.Members[k].ID
			case k == math.MaxUint8:
				in.Owners[s] = ""
			case k%2 == 0:
				in.Owners[s] = "dead"
			}
		}

		p, err := Compute(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("error %v does not wrap ErrInvalidInput", err)
			}
			return
		}
		if err := checkPlan(in, p); err != nil {
			t.Fatal(err)
		}
		rev := in
		rev.Members = slices.Clone(in.Members)
		rev.Shards = slices.Clone(in.Shards)
		slices.Reverse(rev.Members)
		slices.Reverse(rev.Shards)
		if p2, err := Compute(rev); err != nil || !samePlan(p, p2) {
			t.Fatalf("reversed input gave another plan (err %v)", err)
		}
	})
}

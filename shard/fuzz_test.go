package shard

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"
)

// FuzzLeasePolicyValidate: for any three durations (as a command line or a
// config file can give them) Validate never panics, accepts exactly the
// policies that satisfy 2·renew + pause ≤ ttl with positive ttl and renew
// and a non-negative pause — computed here without overflow — and a
// lock-delay of at least ttl − pause, and names
// an offending value when it refuses. The seeds that wrap 2·renew or
// renew + pause around pin an overflow that accepts an absurd policy
// (docs/reliability.md, "Fuzzing").
func FuzzLeasePolicyValidate(f *testing.F) {
	f.Add(int64(10*time.Second), int64(2*time.Second), int64(5*time.Second))
	f.Add(int64(30*time.Second), int64(10*time.Second), int64(12*time.Second))
	f.Add(int64(0), int64(-1), int64(-1))
	f.Add(int64(time.Second), int64(1)<<62, int64(0))                  // 2·renew wraps to -2^63
	f.Add(int64(10*time.Second), int64(2*time.Second), int64(1<<63-1)) // renew + pause wraps
	f.Add(int64(1<<63-1), int64(1<<62-1), int64(1))
	f.Fuzz(func(t *testing.T, ttl, renew, pause int64) {
		// The lock-delay is derived from the other three so that both of
		// its sides of the rule are reached: the default (0), exactly the
		// minimum, and one nanosecond short of it.
		var lockDelay int64
		switch {
		case pause%3 == 1 && ttl > pause:
			lockDelay = ttl - pause
		case pause%3 == 2 && ttl-pause > 1:
			lockDelay = ttl - pause - 1
		}
		p := LeasePolicy{TTL: time.Duration(ttl), RenewEvery: time.Duration(renew), PauseBudget: time.Duration(pause), LockDelay: time.Duration(lockDelay)}
		err := p.Validate()

		need := new(big.Int).Mul(big.NewInt(renew), big.NewInt(2))
		need.Add(need, big.NewInt(pause))
		effective := lockDelay
		if effective == 0 {
			effective = ttl
		}
		ok := ttl > 0 && renew > 0 && pause >= 0 && need.Cmp(big.NewInt(ttl)) <= 0 && effective >= ttl-pause
		if ok != (err == nil) {
			t.Fatalf("%+v: Validate = %v, but 2·renew + pause = %v vs ttl %d says ok=%v", p, err, need, ttl, ok)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("%+v: %v does not wrap ErrInvalidPolicy", p, err)
			}
			if !strings.Contains(err.Error(), p.TTL.String()) && !strings.Contains(err.Error(), p.RenewEvery.String()) &&
				!strings.Contains(err.Error(), p.PauseBudget.String()) && !strings.Contains(err.Error(), p.LockDelay.String()) {
				t.Fatalf("%+v: %q names none of the values", p, err)
			}
			return
		}
		if sd := p.StepDownAfter(); sd < 2*p.RenewEvery || sd > p.TTL {
			t.Fatalf("%+v: valid, but steps down %v after a renewal: want between 2·renew and ttl", p, sd)
		}
		if p.EffectiveLockDelay() < p.StepDownAfter() {
			t.Fatalf("%+v: valid, but its lock-delay %v frees the locks before the step-down deadline %v", p, p.EffectiveLockDelay(), p.StepDownAfter())
		}
	})
}

// FuzzConfig: a fleet config read from the coordinator (P/config, JSON
// written by any worker or an operator) is either refused by Validate with
// a message naming the bad value, or yields a shard set of exactly Shards
// distinct names, in order, that round-trips through JSON.
func FuzzConfig(f *testing.F) {
	f.Add([]byte(`{"shards":128,"name":"stream/shard"}`))
	f.Add([]byte(`{"shards":8}`))
	f.Add([]byte(`{"shards":0,"name":"/x"}`))
	f.Add([]byte(`{"shards":1000,"name":"a b"}`))
	f.Add([]byte(`{"shards":131073}`))
	f.Add([]byte(`{"shards":-1,"name":"x/"}`))
	f.Add([]byte(`{"shards":"12"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"shards":8,"protocol":-1}`))
	f.Add([]byte(`{"shards":8,"protocol":1}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		var c Config
		if json.Unmarshal(value, &c) != nil {
			return // the coordinators report undecodable values themselves
		}
		err := c.Validate()
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("%+v: %v does not wrap ErrInvalidConfig", c, err)
			}
			n := c.Normalize()
			if !strings.Contains(err.Error(), fmt.Sprint(c.Shards)) && !strings.Contains(err.Error(), fmt.Sprintf("%q", n.Name)) &&
				!strings.Contains(err.Error(), fmt.Sprintf("protocol %d", c.Protocol)) {
				t.Fatalf("%+v: %q names neither the count, the name nor the protocol", c, err)
			}
			return
		}
		n := c.Normalize()
		if !n.Normalize().Same(n) || !c.Equal(n) || !n.Equal(c) || !c.SameFleet(n) || n.Protocol == 0 {
			t.Fatalf("%+v: Normalize is not idempotent, Equal or SameFleet not reflexive, or no protocol filled in", c)
		}
		if c.Shards <= 4096 { // IDs of the largest fleets are checked by the unit tests
			ids := c.IDs()
			if len(ids) != c.Shards {
				t.Fatalf("%+v: %d ids", c, len(ids))
			}
			for i := 1; i < len(ids); i++ {
				if ids[i-1] >= ids[i] {
					t.Fatalf("%+v: ids out of order or repeated: %q then %q", c, ids[i-1], ids[i])
				}
			}
		}
		b, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		var back Config
		if err := json.Unmarshal(b, &back); err != nil || !back.Same(n) || back.Generation != n.Generation {
			t.Fatalf("%+v: JSON round trip gave %+v (%v)", n, back, err)
		}
	})
}

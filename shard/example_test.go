package shard_test

import (
	"fmt"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// The rule 2·RenewEvery + PauseBudget ≤ TTL, on the defaults and on a
// policy that breaks it: renewing every 5 s with a 12 s TTL cannot absorb
// 9 s pauses.
func ExampleLeasePolicy_Validate() {
	p := shard.DefaultPolicy
	fmt.Println(p.Validate(), "need", p.Need(), "step down", p.StepDownAfter(), "after a renewal")

	p = shard.LeasePolicy{TTL: 12 * time.Second, RenewEvery: 5 * time.Second, PauseBudget: 9 * time.Second}
	fmt.Println(p.Validate())

	// One way out: renew often enough that two renewals and a pause fit.
	p.RenewEvery = time.Second
	fmt.Println(p.Validate(), "need", p.Need(), "step down", p.StepDownAfter(), "after a renewal")
	// Output:
	// <nil> need 4.5s step down 2.5s after a renewal
	// shard: invalid lease policy: 2 × renew 5s + pause 9s = 19s exceeds ttl 12s by 7s
	// <nil> need 11s step down 3s after a renewal
}

// A fleet's shard IDs come from its Config: the name stem and a number
// padded to at least three digits.
func ExampleConfig_IDs() {
	fmt.Println(shard.Config{Shards: 3}.IDs())
	fmt.Println(shard.Config{Shards: 2, Name: "invoices"}.IDs())
	fmt.Println(shard.Config{Shards: 0}.Validate())
	// Output:
	// [stream/shard-000 stream/shard-001 stream/shard-002]
	// [invoices-000 invoices-001]
	// shard: invalid fleet config: shard count 0 is out of range: want 1..131072
}

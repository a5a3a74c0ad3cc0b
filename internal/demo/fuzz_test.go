package demo

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// FuzzOptionsValidate: the demo's options come from the command line.
// Validate never panics, names each value it refuses, and accepts only
// options whose lease policy is valid and whose sizes are in range.
func FuzzOptionsValidate(f *testing.F) {
	f.Add(12, 128, int64(0), int64(2*time.Second), int64(400*time.Millisecond), int64(time.Second), 50)
	f.Add(1, 0, int64(-1), int64(0), int64(0), int64(0), 0)
	f.Add(2, 65537, int64(time.Second), int64(time.Second), int64(1)<<62, int64(0), -5) // 2·renew once wrapped around
	f.Add(1001, 1, int64(30*time.Second), int64(10*time.Second), int64(2*time.Second), int64(1<<63-1), 1)
	f.Fuzz(func(t *testing.T, workers, shards int, duration, ttl, renew, pause int64, rate int) {
		o := Options{Workers: workers, Shards: shards, Duration: time.Duration(duration), Rate: rate,
			Policy: shard.LeasePolicy{TTL: time.Duration(ttl), RenewEvery: time.Duration(renew), PauseBudget: time.Duration(pause)}}
		err := o.Validate()
		d := o.withDefaults()
		if err == nil {
			if perr := d.Policy.Validate(); perr != nil || d.Workers < 2 || d.Shards < 1 || d.Shards > shard.MaxShards || d.Rate < 1 || d.Duration < 0 {
				t.Fatalf("%+v accepted: policy %v", d, perr)
			}
			return
		}
		msg := err.Error()
		for _, bad := range []struct {
			wrong bool
			value string
		}{
			{d.Workers < 2 || d.Workers > 1000, fmt.Sprintf("--workers %d", d.Workers)},
			{d.Shards < 1 || d.Shards > shard.MaxShards, fmt.Sprintf("--shards %d", d.Shards)},
			{d.Rate < 1, fmt.Sprintf("--rate %d", d.Rate)},
			{d.Duration < 0, fmt.Sprintf("--duration %v", d.Duration)},
		} {
			if bad.wrong && !strings.Contains(msg, bad.value) {
				t.Fatalf("%+v: %q does not name %q", d, msg, bad.value)
			}
		}
		if p := d.Policy; p.Validate() != nil && !strings.Contains(msg, p.TTL.String()) &&
			!strings.Contains(msg, p.RenewEvery.String()) && !strings.Contains(msg, p.PauseBudget.String()) {
			t.Fatalf("%+v: %q names none of the policy's values", d, msg)
		}
	})
}

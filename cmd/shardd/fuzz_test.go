package main

import (
	"bytes"
	"github.com/shardlease/shardlease/shard/consul"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzWorkerFlags: `shardd worker` with any values for its durations, its
// shard set and its ID never panics. It either accepts them — and then the
// policy and every duration are valid — or refuses with exit 2 and a
// message naming the value it could not read (the first one, as the flag
// package stops there), or the flag or setting whose value is out of range.
func FuzzWorkerFlags(f *testing.F) {
	f.Add("10s", "2s", "5s", "1s", "10s", "1s", 8, "stream/shard", "w1")
	f.Add("30s", "10s", "12s", "1s", "10s", "1s", 8, "stream/shard", "w1")
	f.Add("1s", "1281024h", "0s", "0s", "0s", "1ms", 1, "s", "w") // 2·renew once wrapped around and passed
	f.Add("10s", "2s", "5s", "-1s", "-1s", "0s", 0, "/x", "")
	f.Add("10s", "2s", "5s", "1000000h", "1s", "1s", 70000, "a b", "w 1")
	f.Add("ten", "2s", "5s", "1s", "1s", "1s", 8, "stream/shard", "w1")
	f.Fuzz(func(t *testing.T, ttl, renew, pause, lockDelay, drain, commitEvery string, shards int, name, id string) {
		durations := []struct{ flag, value string }{
			{"ttl", ttl}, {"renew", renew}, {"pause-budget", pause},
			{"lock-delay", lockDelay}, {"drain-timeout", drain}, {"commit-every", commitEvery},
		}
		args := []string{"--prefix=fuzz/fleet", "--consul=127.0.0.1:1", "--consul-liveness=check",
			"--shards=" + strconv.Itoa(shards), "--shard-name=" + name, "--id=" + id}
		for _, d := range durations {
			args = append(args, "--"+d.flag+"="+d.value)
		}
		var stderr bytes.Buffer
		fl, code, ok := parseWorkerFlags(args, &stderr)
		msg := stderr.String()

		for _, d := range durations {
			if _, err := time.ParseDuration(d.value); err != nil {
				if ok || code != exitBadInvoke || !strings.Contains(msg, strconv.Quote(d.value)) {
					t.Fatalf("--%s=%q: ok=%v exit %d, stderr %q: want exit 2 naming the value", d.flag, d.value, ok, code, msg)
				}
				return
			}
		}
		if ok {
			if err := fl.policy.Validate(); err != nil {
				t.Fatalf("accepted %v, but its policy is invalid: %v", args, err)
			}
			if err := fl.fleet.Validate(); err != nil || fl.policy.EffectiveLockDelay() > consul.MaxLockDelay || fl.drain < 0 || fl.commitEvery <= 0 || fl.id == "" {
				t.Fatalf("accepted %v: %+v (fleet: %v)", args, fl, err)
			}
			return
		}
		if code != exitBadInvoke || msg == "" {
			t.Fatalf("refused %v with exit %d and stderr %q: want exit 2 and a reason", args, code, msg)
		}
		named := false
		for _, fl := range []string{"ttl", "renew", "pause-budget", "lock-delay", "drain-timeout", "commit-every", "shards", "shard-name", "id", "prefix"} {
			named = named || strings.Contains(msg, "--"+fl) || strings.Contains(msg, "-"+fl+":")
		}
		// The libraries name the setting and its value in words.
		for _, setting := range []string{"ttl ", "renew interval ", "pause budget ", "lock-delay ", "drain timeout ", "shard count ", "shard name ", "worker id "} {
			named = named || strings.Contains(msg, setting)
		}
		if !named {
			t.Fatalf("refused %v: %q names no flag", args, msg)
		}
	})
}

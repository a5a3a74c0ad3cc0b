package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestWorkerAndRunGiveAFlagOneMeaning: the flags `shardd worker` and
// `shardd run` share are checked the one way, by the libraries, so a bad
// value is refused with the same words by both.
func TestWorkerAndRunGiveAFlagOneMeaning(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--lock-delay", "none"}, "there is no lock-delay of none"},
		{[]string{"--lock-delay", "-1s"}, "lock-delay -1s must not be negative: zero means the default, the ttl"},
		{[]string{"--lock-delay", "2s"}, "lock-delay 2s is shorter than the step-down deadline ttl 5s − pause 2.5s = 2.5s by 500ms"},
		{[]string{"--ttl", "1s"}, "2 × renew 1s + pause 2.5s = 4.5s exceeds ttl 1s by 3.5s"},
		{[]string{"--drain-timeout", "-1s"}, "drain timeout -1s must not be negative (zero means the default, 10s)"},
		{[]string{"--rejoin-grace", "-1s"}, "rejoin grace -1s must not be negative (zero means none"},
		{[]string{"--drain-before-stop", "2h"}, "drain before stop 2h0m0s must be between 0"},
		{[]string{"--drain-before-stop", "1m", "--rejoin-grace", "1m"}, "nothing to drain; set one of them"},
		{[]string{"--max-moves-in-flight", "-1"}, "max moves in flight -1 must not be negative"},
		{[]string{"--id", "a b"}, `worker id "a b" must not contain '/' or spaces`},
		{[]string{"--shard-name", "/x"}, `shard name "/x" must not contain spaces or start or end with '/'`},
		{[]string{"--shards", "-1"}, "shard count -1 is out of range"},
	} {
		for _, args := range [][]string{
			append([]string{"worker", "--consul", "127.0.0.1:1", "--prefix", "p", "--shards", "8", "--id", "w1"}, tc.flags...),
			append(append([]string{"run", "--shards", "8", "--id", "w1"}, tc.flags...), "--", "true"),
		} {
			var out, errb bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			code := run(ctx, args, &out, &errb)
			cancel()
			if code != exitBadInvoke || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("shardd %v: exit %d, stderr %q; want exit 2 saying %q", args, code, errb.String(), tc.want)
			}
		}
	}
}

// TestLockDelayZeroIsTheTTLEverywhere: --lock-delay 0 is the policy's
// default, the ttl, for every command, as in shard.LeasePolicy; a duration
// is taken as given.
func TestLockDelayZeroIsTheTTLEverywhere(t *testing.T) {
	var errb bytes.Buffer
	base := []string{"--consul=127.0.0.1:1", "--prefix=p", "--shards=8", "--id=w1", "--ttl=12s"}
	for _, tc := range []struct {
		flag string
		want time.Duration
	}{{"--lock-delay=0", 12 * time.Second}, {"--lock-delay=0s", 12 * time.Second}, {"--lock-delay=10s", 10 * time.Second}} {
		wf, code, ok := parseWorkerFlags(append(base, tc.flag), &errb)
		if !ok {
			t.Fatalf("shardd worker %s: exit %d: %s", tc.flag, code, errb.String())
		}
		rf, code, ok := parseRunFlags(append(base, tc.flag, "--", "true"), &errb)
		if !ok {
			t.Fatalf("shardd run %s: exit %d: %s", tc.flag, code, errb.String())
		}
		for _, got := range []time.Duration{wf.policy.EffectiveLockDelay(), rf.policy.EffectiveLockDelay(),
			wf.policy.SessionSpec("w1").LockDelay, rf.policy.SessionSpec("w1").LockDelay} {
			if got != tc.want {
				t.Errorf("%s with --ttl 12s: the session's lock-delay is %v, want %v", tc.flag, got, tc.want)
			}
		}
	}
}

// TestLeaseFlagsDefault: no lease flag is shard.DefaultPolicy (its own
// lock-delay, 3 s), or shard.SessionTTLPolicy with --consul-liveness ttl;
// any lease flag fills the others from that policy, the lock-delay from
// the ttl.
func TestLeaseFlagsDefault(t *testing.T) {
	base := []string{"--consul=127.0.0.1:1", "--prefix=p", "--shards=8", "--id=w1"}
	for _, tc := range []struct {
		flags []string
		want  shard.LeasePolicy
	}{
		{nil, shard.DefaultPolicy},
		{[]string{"--consul-liveness=ttl"}, shard.SessionTTLPolicy},
		{[]string{"--renew=500ms"}, shard.LeasePolicy{TTL: 5 * time.Second, RenewEvery: 500 * time.Millisecond, PauseBudget: 2500 * time.Millisecond}},
		{[]string{"--consul-liveness=ttl", "--ttl=20s"}, shard.LeasePolicy{TTL: 20 * time.Second, RenewEvery: 2 * time.Second, PauseBudget: 5 * time.Second}},
	} {
		var errb bytes.Buffer
		f, code, ok := parseWorkerFlags(append(base, tc.flags...), &errb)
		if !ok {
			t.Fatalf("shardd worker %v: exit %d: %s", tc.flags, code, errb.String())
		}
		if f.policy != tc.want {
			t.Errorf("shardd worker %v: policy %+v, want %+v", tc.flags, f.policy, tc.want)
		}
	}
}

// TestZoneAndLabelFlags: --zone and --labels (or SHARDLEASE_ZONE and
// SHARDLEASE_LABELS) become the worker's Zone and Labels; bad values are
// refused naming them.
func TestZoneAndLabelFlags(t *testing.T) {
	base := []string{"--consul=127.0.0.1:1", "--prefix=p", "--shards=8", "--id=w1"}
	var errb bytes.Buffer
	f, code, ok := parseWorkerFlags(append(base, "--zone=eu-west-1a", "--labels=disk=ssd,rack=r7"), &errb)
	if !ok {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if c := f.settings(); c.Zone != "eu-west-1a" || c.Labels["disk"] != "ssd" || c.Labels["rack"] != "r7" || len(c.Labels) != 2 {
		t.Errorf("zone %q, labels %v", c.Zone, c.Labels)
	}

	t.Setenv("SHARDLEASE_ZONE", "zone-b")
	t.Setenv("SHARDLEASE_LABELS", "disk=hdd")
	errb.Reset()
	f, code, ok = parseWorkerFlags(base, &errb)
	if !ok {
		t.Fatalf("from the environment: exit %d: %s", code, errb.String())
	}
	if c := f.settings(); c.Zone != "zone-b" || c.Labels["disk"] != "hdd" {
		t.Errorf("from the environment: zone %q, labels %v", c.Zone, c.Labels)
	}

	for _, tc := range []struct {
		flags []string
		env   string
		want  string
	}{
		{[]string{"--zone=eu west"}, "", `zone "eu west" has ' '`},
		{[]string{"--labels=disk"}, "", `label "disk" has no '='`},
		{nil, "disk", `SHARDLEASE_LABELS: shard: invalid argument: label "disk" has no '='`},
	} {
		t.Setenv("SHARDLEASE_LABELS", tc.env)
		errb.Reset()
		if _, code, ok := parseWorkerFlags(append(base, tc.flags...), &errb); ok || code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("shardd worker %v (SHARDLEASE_LABELS=%q): ok %v, exit %d, %q; want a refusal saying %q", tc.flags, tc.env, ok, code, errb.String(), tc.want)
		}
	}
}

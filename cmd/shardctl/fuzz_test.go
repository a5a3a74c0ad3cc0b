package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// FuzzPolicyCommand: `shardctl policy -ttl D -renew D -pause D` with any
// three values never panics; it exits 2 naming the value it cannot read or
// that is out of range, 1 when the policy breaks the rule, and 0 exactly
// when shard.LeasePolicy.Validate accepts it; either way it prints the
// numbers it judged.
func FuzzPolicyCommand(f *testing.F) {
	f.Add("10s", "2s", "5s")
	f.Add("30s", "10s", "12s")
	f.Add("1s", "1281024h", "0s") // 2·renew once wrapped around and passed
	f.Add("2562047h47m16.854775807s", "2s", "0s")
	f.Add("0s", "-1s", "-1ns")
	f.Add("ten seconds", "2s", "5s")
	f.Add("10s", "", "5")
	f.Fuzz(func(t *testing.T, ttl, renew, pause string) {
		var out, errOut bytes.Buffer
		a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
			getenv: func(string) string { return "" }, now: time.Now}
		code := a.run(context.Background(), []string{"policy", "-ttl=" + ttl, "-renew=" + renew, "-pause=" + pause})
		all := out.String() + errOut.String()

		var p shard.LeasePolicy
		vals := []string{ttl, renew, pause}
		for i, d := range []*time.Duration{&p.TTL, &p.RenewEvery, &p.PauseBudget} {
			v, err := time.ParseDuration(vals[i])
			if err != nil {
				if code != exitBadInvoke || !strings.Contains(all, strconv.Quote(vals[i])) {
					t.Fatalf("policy %q %q %q: exit %d, output %q: want 2 naming %q", ttl, renew, pause, code, all, vals[i])
				}
				return
			}
			*d = v
		}
		if p.TTL <= 0 || p.RenewEvery <= 0 || p.PauseBudget < 0 {
			if code != exitBadInvoke {
				t.Fatalf("%+v: exit %d for a non-positive value, want 2; output %q", p, code, all)
			}
			return
		}
		if !strings.Contains(all, p.TTL.String()) || !strings.Contains(all, p.RenewEvery.String()) || !strings.Contains(all, p.PauseBudget.String()) {
			t.Fatalf("%+v: the output does not name the numbers it judged: %q", p, all)
		}
		// The verdict is Validate's, at every TTL (the largest duration
		// included, where the saturated Need alone could not tell).
		if valid := p.Validate() == nil; valid != (code == exitOK) {
			t.Fatalf("%+v: exit %d, but Validate says valid=%v; output %q", p, code, valid, all)
		}
	})
}

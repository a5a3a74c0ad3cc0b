package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestHistoryAndExplain: after a graceful hand-off, shardctl history shows
// the shard's tenures from the fleet's keys, and explain names the old
// owner for its token, says how the tenure ended, that a newer owner holds
// the shard, and that the store refuses the old token once the new owner
// fenced.
func TestHistoryAndExplain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 4, "w1")
		before := map[string]uint64{}
		for _, st := range f.snapshot().Shards {
			before[string(st.Shard)] = uint64(st.Token)
		}
		f.start("w2")
		settle(30 * time.Second)
		// The shard that moved to w2 with the highest number: its old and
		// new tokens.
		var id string
		var oldToken, now uint64
		for _, st := range f.snapshot().Shards {
			if st.Owner.Worker == "w2" {
				id, oldToken, now = string(st.Shard), before[string(st.Shard)], uint64(st.Token)
			}
		}
		if id == "" || oldToken == 0 {
			t.Fatalf("no shard moved from w1 to w2 after w2 joined: %v", f.snapshot().Owners())
		}

		code, out, errOut := f.run(t.Context(), "", "history", "-prefix", "orders", id)
		if code != 0 {
			t.Fatalf("history: exit %d: %s", code, errOut)
		}
		t.Logf("\n%s", out)
		for _, want := range []string{
			fmt.Sprintf("%s → w1 (token %d): initial", id, oldToken),
			fmt.Sprintf("%s → w2 from w1 (token %d): rebalance", id, now),
		} {
			if !strings.Contains(out, want) {
				t.Errorf("history lacks %q", want)
			}
		}

		code, out, errOut = f.run(t.Context(), "", "explain", "-prefix", "orders", "-offsets", "consul", id, fmt.Sprint(oldToken))
		if code != 0 {
			t.Fatalf("explain: exit %d: %s", code, errOut)
		}
		t.Logf("\n%s", out)
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(fmt.Sprintf(`held by w1 \(token %d\), from .* \(initial[^)]*\), ended between .* \(last seen held\) and .*: (released \(rebalance\)|w2 took it with token %d)`, oldToken, now)),
			regexp.MustCompile(fmt.Sprintf(`after it:  w2 \(token %d\)`, now)),
			regexp.MustCompile(fmt.Sprintf(`now: w2 holds the shard at token %d, above this one`, now)),
			regexp.MustCompile(fmt.Sprintf(`offsets store: floor %d: a write with token %d is REFUSED now`, now, oldToken)),
		} {
			if !want.MatchString(out) {
				t.Errorf("explain lacks %s", want)
			}
		}

		for at, want := range map[string]string{"2000-01-01T00:00:10Z": "this tenure was in force", "2000-01-01T00:00:40Z": "this tenure was NOT in force"} {
			code, out, errOut := f.run(t.Context(), "", "explain", "-prefix", "orders", id, fmt.Sprint(oldToken), at)
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("explain at %s: exit %d, %s%s; want %q", at, code, out, errOut, want)
			}
		}

		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"explain", "-prefix", "orders", id, "x7"}, `token "x7": want the positive number`},
			{[]string{"explain", "-prefix", "orders", id}, "missing shard and token"},
			{[]string{"explain", "-prefix", "orders", id, "5", "yesterday"}, `time "yesterday": want RFC 3339`},
			{[]string{"explain", "-prefix", "orders", "stream/shard-099", "5"}, `no shard "stream/shard-099"`},
			{[]string{"history", "-prefix", "orders", "-n", "-1"}, "-n -1"},
		} {
			code, _, errOut := f.run(t.Context(), "", tc.args...)
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Errorf("%s: exit %d, %q; want a refusal saying %q", strings.Join(tc.args, " "), code, errOut, tc.want)
			}
		}
	})
}

package main

import (
	"bytes"
	"strings"
	"testing"
	"testing/synctest"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOnlyTheDeadWorkersShardsMoveAndNothingIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		res, err := run(t.Context(), defaultOptions(), &out)
		t.Logf("transcript:\n%s", out.String())
		if err != nil {
			t.Fatal(err)
		}
		if err := res.check(); err != nil {
			t.Fatal(err)
		}
		if res.victimShards < 10 || res.victimShards > 11 {
			t.Errorf("the victim held %d shards, want 10 or 11 of 128 over 12 workers", res.victimShards)
		}
		if res.accepted < 128*int(defaultOptions().length/defaultOptions().commitEvery) {
			t.Errorf("%d commits accepted, want at least one per %d messages of every shard", res.accepted, defaultOptions().commitEvery)
		}
		for _, want := range []string{"balanced: all 128 shards owned", "*** w07 dies holding", "→", "0 messages lost", "only w07's shards moved", "as promised"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("transcript lacks %q", want)
			}
		}
	})
}

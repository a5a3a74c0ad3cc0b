package main

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestReshardCommand: shardctl reshard starts a reshard, shows its
// progress (also in status), refuses a second one, bad flags and a count
// that changes nothing, and cancels it. The fixture's handlers never
// close their shards, so the reshard stays with every parent closing.
func TestReshardCommand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 4, "w1", "w2")
		ctx := t.Context()
		check := func(what string, wantCode int, out, errOut string, code int, want ...string) {
			t.Helper()
			all := out + errOut
			if code != wantCode {
				t.Errorf("%s: exit %d, want %d; %q", what, code, wantCode, all)
			}
			for _, w := range want {
				if !strings.Contains(all, w) {
					t.Errorf("%s: output %q does not say %q", what, all, w)
				}
			}
		}
		code, out, errOut := f.run(ctx, "", "reshard", "-prefix", "orders", "-to", "4", "--by", "carol")
		check("reshard to the same count", 1, out, errOut, code, "has 4 shards already")
		code, out, errOut = f.run(ctx, "", "reshard", "-prefix", "orders", "-to", "8", "-lineage", "hash", "--by", "carol")
		check("reshard with a bad lineage", 2, out, errOut, code, `-lineage "hash"`)
		code, out, errOut = f.run(ctx, "", "reshard", "-prefix", "orders", "-to", "8", "-cancel", "--by", "carol")
		check("-to with -cancel", 2, out, errOut, code, "not both")

		code, out, errOut = f.run(ctx, "", "reshard", "-prefix", "orders", "-to", "8", "--by", "carol", "--reason", "traffic doubled")
		check("reshard", 0, out, errOut, code, "fleet orders resharding to 8 shards named stream/shard.r1-…")
		settle(5 * time.Second)
		code, out, errOut = f.run(ctx, "", "reshard", "-prefix", "orders")
		check("progress", 0, out, errOut, code, "RESHARDING to 8 shards named stream/shard.r1-… (lineage mod), started by carol",
			"traffic doubled", "parents: 0 closed, 4 closing now (stream/shard-000, stream/shard-001, stream/shard-002, …), 0 waiting their turn", "children: 0 open, 8 waiting")
		_, out, _ = f.run(ctx, "", "status", "-prefix", "orders", "-no-shards")
		check("status", 0, out, "", 0, "fleet orders · 8 shards", "RESHARDING to 8")
		code, out, errOut = f.run(ctx, "", "reshard", "-prefix", "orders", "-to", "16", "--by", "dave")
		check("a second reshard", 1, out, errOut, code, "already resharding to 8 shards")

		code, out, errOut = f.run(ctx, "", "reshard", "-prefix", "orders", "-cancel", "--by", "carol")
		check("cancel", 0, out, errOut, code, "reshard cancelled")
		code, out, errOut = f.run(ctx, "", "reshard", "-prefix", "orders")
		check("after the cancel", 0, out, errOut, code, "no reshard in progress: 4 shards named stream/shard-… (1 reshards recorded)")
		code, out, errOut = f.run(ctx, "", "reshard", "-prefix", "orders", "-cancel", "--by", "carol")
		check("a second cancel", 1, out, errOut, code, "not resharding: nothing to cancel")
	})
}

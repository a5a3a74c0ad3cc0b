package main

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestRulesCommand: rules are listed, added, removed and cleared; a pin
// is followed; a rule that would strand shards is refused unless -force,
// and status then reports them unowned; bad rules are refused naming
// the value.
func TestRulesCommand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 12)
		f.labels = map[string]map[string]string{"w1": {"disk": "ssd"}}
		f.start("w1")
		f.start("w2")
		settle(30 * time.Second)
		run := func(args ...string) (int, string, string) {
			code, out, errOut := f.run(t.Context(), "", append([]string{"rules", "-prefix", "orders"}, args...)...)
			t.Logf("rules %v: exit %d\n%s%s", args, code, out, errOut)
			return code, out, errOut
		}
		if code, _, errOut := run("add", "pin", "stream/shard-00*", "disk=ssd"); code == 0 || !strings.Contains(errOut, "stores no readable balance policy") {
			t.Fatalf("rules on a fleet with no stored policy: exit %d, %q; want a refusal saying so", code, errOut)
		}
		if code, _, errOut := f.run(t.Context(), "", "balance", "-prefix", "orders", "-by", "count"); code != 0 {
			t.Fatal(errOut)
		}
		if code, out, _ := run(); code != 0 || !strings.Contains(out, "has no placement rules") {
			t.Fatalf("list: exit %d, %q", code, out)
		}
		if code, out, _ := run("add", "pin", "stream/shard-00*", "disk=ssd"); code != 0 || !strings.Contains(out, "  1  pin stream/shard-00* disk=ssd") {
			t.Fatalf("add: exit %d, %q", code, out)
		}
		settle(time.Minute)
		for s, w := range f.owners() {
			if s < "stream/shard-010" && w != "w1" {
				t.Errorf("%s is owned by %s, pinned to disk=ssd (w1)", s, w)
			}
		}
		if code, _, errOut := run("add", "pin", "stream/shard-01*", "disk=nvme"); code == 0 || !strings.Contains(errOut, "2 shards (first stream/shard-010) would have no live worker") {
			t.Fatalf("a stranding rule: exit %d, %q; want a refusal naming them", code, errOut)
		}
		if code, _, _ := run("add", "pin", "stream/shard-01*", "disk=nvme", "-force"); code != 0 {
			t.Fatal("-force refused")
		}
		settle(time.Minute)
		code, out, _ := f.run(t.Context(), "", "status", "-prefix", "orders")
		if code != 0 || !strings.Contains(out, "UNPLACEABLE: 2 shards no live worker may own under the placement rules (stream/shard-010, stream/shard-011)") ||
			!strings.Contains(out, "placement rules: 2") || !strings.Contains(out, "disk=ssd") {
			t.Errorf("status with stranded shards: exit %d\n%s", code, out)
		}
		if owners := f.owners(); owners["stream/shard-010"] != "" || owners["stream/shard-011"] != "" {
			t.Errorf("stranded shards owned: %v", owners)
		}
		if code, out, _ := run("remove", "2"); code != 0 || !strings.HasPrefix(out, "removing rule 2: pin stream/shard-01* disk=nvme\n") || strings.Count(out, "nvme") != 1 {
			t.Fatalf("remove 2: exit %d, %q", code, out)
		}
		settle(time.Minute)
		if owners := f.owners(); owners["stream/shard-010"] == "" || len(owners) != 12 {
			t.Errorf("after the stranding rule was removed: %v, want every shard owned", owners)
		}
		for _, bad := range [][]string{{"add", "keep", "x*", "a=b"}, {"remove", "7"}, {"frob"}, {"add", "pin", "x*"}} {
			if code, _, errOut := run(bad...); code == 0 || errOut == "" {
				t.Errorf("rules %v accepted", bad)
			}
		}
		if code, out, _ := run("clear"); code != 0 || !strings.Contains(out, "has no placement rules") {
			t.Fatalf("clear: exit %d, %q", code, out)
		}
	})
}

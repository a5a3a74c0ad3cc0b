package main

import (
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestStatusByZone: with workers in zones, status says what each zone owns
// against its share and lists the workers grouped by zone.
func TestStatusByZone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 12)
		f.zones = map[string]string{"w1": "zone-b", "w2": "zone-a", "w3": "zone-b"}
		for _, id := range []string{"w1", "w2", "w3"} {
			f.start(id)
		}
		settle(30 * time.Second)
		code, out, errOut := f.run(t.Context(), "", "status", "-prefix", "orders")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		t.Logf("\n%s", out)
		if !strings.Contains(out, "zones (owned of share): zone-a 4 of 4.0 (1 workers) · zone-b 8 of 8.0 (2 workers)") {
			t.Errorf("no zones line with each zone's share")
		}
		if !regexp.MustCompile(`(?s)ZONE\s+WORKER.*\nzone-a\s+w2\s.*\nzone-b\s+w1\s.*\nzone-b\s+w3\s`).MatchString(out) {
			t.Errorf("workers not listed by zone")
		}
	})
}

// TestZoneDrainAndCordon: drain --zone moves a zone's shards to the other
// zone, showing each worker's progress, and undrain --zone brings its
// share back in proportion; cordon and uncordon --zone act on every worker
// of the zone; a zone and a worker together, or neither, are refused.
func TestZoneDrainAndCordon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 24)
		f.zones = map[string]string{"w1": "zone-a", "w2": "zone-a", "w3": "zone-b", "w4": "zone-b"}
		for _, id := range []string{"w1", "w2", "w3", "w4"} {
			f.start(id)
		}
		settle(30 * time.Second)
		zoneOf := func() map[string]int {
			c := map[string]int{}
			for _, w := range f.owners() {
				c[f.zones[w]]++
			}
			return c
		}
		code, out, errOut := f.run(t.Context(), "", "drain", "-prefix", "orders", "--zone", "zone-a")
		t.Logf("\n%s", out)
		if code != 0 {
			t.Fatalf("drain --zone: exit %d: %s", code, errOut)
		}
		for _, want := range []string{"drain of w1 (zone zone-a) set: it owns 6 shards", "drain of w2 (zone zone-a) set", "w1 drained in", "w2 drained in"} {
			if !strings.Contains(out, want) {
				t.Errorf("drain --zone output lacks %q", want)
			}
		}
		if c := zoneOf(); c["zone-a"] != 0 || c["zone-b"] != 24 {
			t.Errorf("after the zone's drain: %v, want all 24 in zone-b", c)
		}
		if code, out, _ := f.run(t.Context(), "", "undrain", "-prefix", "orders", "--zone", "zone-a"); code != 0 || strings.Count(out, "withdrawn") != 2 {
			t.Fatalf("undrain --zone: exit %d, %q", code, out)
		}
		settle(60 * time.Second)
		if c := zoneOf(); c["zone-a"] != 12 || c["zone-b"] != 12 {
			t.Errorf("after the zone came back: %v, want 12 each", c)
		}

		code, out, errOut = f.run(t.Context(), "", "cordon", "-prefix", "orders", "--by", "alice", "--zone", "zone-b")
		if code != 0 || strings.Count(out, "cordoned by alice") != 2 {
			t.Fatalf("cordon --zone: exit %d, %q %s", code, out, errOut)
		}
		code, out, errOut = f.run(t.Context(), "", "uncordon", "-prefix", "orders", "--zone", "zone-b")
		if code != 0 || strings.Count(out, "lifted") != 2 {
			t.Fatalf("uncordon --zone: exit %d, %q %s", code, out, errOut)
		}
		for _, tc := range [][]string{
			{"drain", "-prefix", "orders", "--zone", "zone-a", "w1"},
			{"cordon", "-prefix", "orders", "--by", "alice"},
		} {
			if code, _, errOut := f.run(t.Context(), "", tc...); code != 2 || !strings.Contains(errOut, "WORKER") {
				t.Errorf("%v: exit %d, %q; want a usage error naming WORKER and --zone", tc, code, errOut)
			}
		}
		if code, _, errOut := f.run(t.Context(), "", "drain", "-prefix", "orders", "--zone", ""); code != 2 || !strings.Contains(errOut, "an empty zone names no zone") {
			t.Errorf("drain --zone \"\": exit %d, %q; want a usage error", code, errOut)
		}
		if code, _, errOut := f.run(t.Context(), "", "drain", "-prefix", "orders", "--zone", "zone-c"); code != 1 || !strings.Contains(errOut, `no live worker in zone "zone-c"`) {
			t.Errorf("drain of an unknown zone: exit %d, %q", code, errOut)
		}
	})
}

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

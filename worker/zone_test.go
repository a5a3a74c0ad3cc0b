package worker_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestZoneInTheMemberKey: a worker's zone and labels are in its member
// key; a rewrite that drops them (an operator's tool of a release that
// does not know them, rewriting a drain) keeps the drain and has them
// written back.
func TestZoneInTheMemberKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 4)
		cfg := f.config("a", f.events.waiting("a"))
		cfg.Zone, cfg.Labels = "eu-west-1a", map[string]string{"disk": "ssd"}
		f.startWith(cfg)
		settle(5 * time.Second)
		ms, ok := f.snapshot().Member("a")
		if !ok || ms.Zone != "eu-west-1a" || ms.Labels["disk"] != "ssd" {
			t.Fatalf("member key %+v, want zone eu-west-1a and disk=ssd", ms)
		}

		old := ms.Member
		old.Zone, old.Labels, old.Draining = "", nil, true
		if err := f.coord.Members().Join(context.Background(), ms.Session, old); err != nil {
			t.Fatal(err)
		}
		settle(5 * time.Second)
		ms, _ = f.snapshot().Member("a")
		if ms.Zone != "eu-west-1a" || ms.Labels["disk"] != "ssd" || !ms.Draining {
			t.Fatalf("after a rewrite without the zone: %+v, want the zone and labels back and the drain kept", ms)
		}
	})
}

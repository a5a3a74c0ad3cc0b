package worker_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestZoneInTheMemberKey: a worker's zone and labels are in its member
// key; a rewrite that drops them, or its standby side (an operator's
// tool of a release that does not know them, rewriting a drain), keeps
// the drain and has them written back.
func TestZoneInTheMemberKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 4)
		cfg := f.config("a", &standbyHandler{})
		cfg.Zone, cfg.Labels = "eu-west-1a", map[string]string{"disk": "ssd"}
		reg := prometheus.NewRegistry()
		cfg.Registerer = reg
		f.startWith(cfg)
		settle(5 * time.Second)
		ms, ok := f.snapshot().Member("a")
		if !ok || ms.Zone != "eu-west-1a" || ms.Labels["disk"] != "ssd" {
			t.Fatalf("member key %+v, want zone eu-west-1a and disk=ssd", ms)
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		zone := "(none)"
		for _, fam := range families {
			if fam.GetName() != "shardlease_member_info" || len(fam.GetMetric()) != 1 {
				continue
			}
			for _, l := range fam.GetMetric()[0].GetLabel() {
				if l.GetName() == "zone" {
					zone = l.GetValue()
				}
			}
		}
		if zone != "eu-west-1a" {
			t.Errorf("shardlease_member_info zone=%q, want eu-west-1a", zone)
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
		old = ms.Member
		old.StandbyCapable = false
		if err := f.coord.Members().Join(context.Background(), ms.Session, old); err != nil {
			t.Fatal(err)
		}
		settle(5 * time.Second)
		if ms, _ = f.snapshot().Member("a"); !ms.StandbyCapable || !ms.Draining {
			t.Fatalf("after a rewrite without the standby side: %+v, want it back and the drain kept", ms)
		}
	})
}

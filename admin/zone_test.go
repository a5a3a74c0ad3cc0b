package admin_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/admin"
)

// zoneOperations: a zone's workers are drained, undrained, cordoned and
// uncordoned together; an unknown zone and a zone whose drain or cordon
// would leave no worker outside it to take shards are refused before
// anything is written.
func zoneOperations(t *testing.T, e *env) {
	ids := e.configure(6)
	ctx := t.Context()
	asOperator(e, "alice")
	e.joinIn("zone-a", "w1", ids[0], ids[1])
	e.joinIn("zone-a", "w2", ids[2], ids[3])
	e.joinIn("zone-b", "w3", ids[4], ids[5])

	before := e.snapshot().Index
	_, err := e.op.DrainZone(ctx, "zone-c")
	refused(t, "drain of an unknown zone", err, admin.ErrUnknownZone, `no live worker in zone "zone-c" of fleet orders (zones: zone-a, zone-b)`)
	e.unchanged(before, "a refused zone drain")

	cs, err := e.op.CordonZone(ctx, "zone-a", "maintenance")
	if err != nil || len(cs) != 2 || !cs[0].Changed || !cs[1].Changed || cs[0].Worker != "w1" || cs[1].Worker != "w2" {
		t.Fatalf("CordonZone(zone-a) = %+v, %v; want w1 and w2 cordoned", cs, err)
	}
	for _, w := range []string{"w1", "w2"} {
		if m, _ := e.snapshot().Member(w); m.Cordon == nil || m.Cordon.Reason != "maintenance" {
			t.Errorf("%s after the zone's cordon: %+v", w, m.Member)
		}
	}
	before = e.snapshot().Index
	_, err = e.op.DrainZone(ctx, "zone-b")
	refused(t, "drain of the only zone left to take shards", err, admin.ErrLastWorker, `no live worker outside zone "zone-b"`)
	_, err = e.op.CordonZone(ctx, "zone-b", "")
	refused(t, "cordon of the only zone left to take shards", err, admin.ErrLastUncordoned, `no live worker outside zone "zone-b"`)
	e.unchanged(before, "refused zone operations")

	if cs, err := e.op.UncordonZone(ctx, "zone-a"); err != nil || len(cs) != 2 || !cs[0].Changed || cs[1].Mark != nil {
		t.Fatalf("UncordonZone(zone-a) = %+v, %v", cs, err)
	}
	ds, err := e.op.DrainZone(ctx, "zone-a")
	if err != nil || len(ds) != 2 || !ds[0].Changed || len(ds[0].Shards) != 2 {
		t.Fatalf("DrainZone(zone-a) = %+v, %v; want w1 and w2 draining, 2 shards each", ds, err)
	}
	for _, w := range []string{"w1", "w2"} {
		if m, _ := e.snapshot().Member(w); !m.Draining || m.Zone != "zone-a" {
			t.Errorf("%s after the zone's drain: %+v (its zone must stay)", w, m.Member)
		}
	}
	if ds, err := e.op.UndrainZone(ctx, "zone-a"); err != nil || len(ds) != 2 || !ds[1].Changed {
		t.Fatalf("UndrainZone(zone-a) = %+v, %v", ds, err)
	}
}

// zoneWithAWorkerDown: a zone operation acts on the zone's live workers
// and says which of its workers it could not act on (their member keys
// have no session); an empty zone is refused.
func zoneWithAWorkerDown(t *testing.T, e *env) {
	ids := e.configure(6)
	ctx := t.Context()
	asOperator(e, "alice")
	e.joinIn("zone-a", "w1", ids[0], ids[1])
	e.joinIn("zone-a", "w2", ids[2], ids[3])
	e.joinIn("zone-b", "w3", ids[4], ids[5])
	e.stop("w2")

	cs, err := e.op.CordonZone(ctx, "zone-a", "")
	if !errors.Is(err, admin.ErrZoneWorkersDown) || !strings.Contains(err.Error(), "w2") || len(cs) != 1 || cs[0].Worker != "w1" || !cs[0].Changed {
		t.Fatalf("CordonZone with w2 down = %+v, %v; want w1 cordoned and ErrZoneWorkersDown naming w2", cs, err)
	}
	if _, err := e.op.DrainZone(ctx, ""); !errors.Is(err, admin.ErrUnknownZone) || !strings.Contains(err.Error(), "an empty zone") {
		t.Errorf("DrainZone(\"\") = %v, want ErrUnknownZone saying an empty zone names none", err)
	}
}

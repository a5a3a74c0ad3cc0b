package shard_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

func TestZonesAndLabels(t *testing.T) {
	for _, z := range []string{"", "eu-west-1a", "zone_3.b"} {
		if err := shard.ValidateZone(z); err != nil {
			t.Errorf("ValidateZone(%q) = %v, want nil", z, err)
		}
	}
	for z, want := range map[string]string{"eu west": `has ' ' at byte 2`, "a/b": `has '/'`, strings.Repeat("z", 64): "64 characters long"} {
		if err := shard.ValidateZone(z); !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateZone(%q) = %v, want ErrInvalidArgument saying %q", z, err, want)
		}
	}
	got, err := shard.ParseLabels(" disk=ssd, topology.kubernetes.io/rack=r7,empty=")
	if want := map[string]string{"disk": "ssd", "topology.kubernetes.io/rack": "r7", "empty": ""}; err != nil || !maps.Equal(got, want) {
		t.Errorf("ParseLabels = %v, %v; want %v", got, err, want)
	}
	for in, want := range map[string]string{"disk": `label "disk" has no '='`, "a=1,a=2": `"a" is given twice`, "=x": `label "=x" has an empty key`,
		"disk=s/d": `label disk's value "s/d" has '/'`, "dísk=1": `label key "dísk" has 'í' at byte 1`} {
		if _, err := shard.ParseLabels(in); !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseLabels(%q) = %v, want ErrInvalidArgument saying %q", in, err, want)
		}
	}
	if l, err := shard.ParseLabels("  "); err != nil || len(l) != 0 {
		t.Errorf("ParseLabels(blank) = %v, %v; want none", l, err)
	}
}

package shard

import (
	"errors"
	"strings"
	"testing"
)

// TestConfigMismatch: a worker may join only a fleet of the same shard set
// and the same protocol; the refusal names both of whatever differs, and a
// protocol refusal says there are no mixed fleets.
func TestConfigMismatch(t *testing.T) {
	fleet := Config{Shards: 8}
	resharded := Config{Shards: 8, Protocol: ProtocolResharded, Layouts: []Layout{{Shards: 16, Name: "s2", Lineage: LineageMod, Done: true}}}
	for _, tc := range []struct {
		name    string
		stored  Config
		mine    Config
		want    []string // nil: no error
		notWant string
	}{
		{"same, defaults filled in", fleet, Config{Shards: 8, Name: DefaultName, Protocol: Protocol}, nil, ""},
		{"shard set", fleet, Config{Shards: 9}, []string{"8 shards", "9 shards"}, "protocol"},
		{"protocol", Config{Shards: 8, Protocol: 2}, fleet, []string{"protocol 2", "protocol 3", "no mixed fleets"}, "shards named"},
		{"newer protocol", Config{Shards: 8, Protocol: Protocol + 2}, fleet, []string{"protocol 5", "protocol 3", "no mixed fleets"}, "shards named"},
		{"resharded protocol without a layout", Config{Shards: 8, Protocol: ProtocolResharded}, fleet, []string{"protocol 4", "protocol 3", "no mixed fleets"}, "shards named"},
		{"resharded, first shard set", resharded, fleet, nil, ""},
		{"resharded, current shard set", resharded, Config{Shards: 16, Name: "s2"}, nil, ""},
		{"resharded, neither", resharded, Config{Shards: 12}, []string{"8 shards", `it runs 16 named "s2" now`, "12 shards"}, "protocol"},
		{"both", Config{Shards: 8, Protocol: 2}, Config{Shards: 4, Name: "x"}, []string{"8 shards", `"x"`, "protocol 2", "protocol 3"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ConfigMismatch(tc.stored, tc.mine)
			if same := tc.stored.SameFleet(tc.mine); same != (tc.want == nil) {
				t.Errorf("SameFleet = %v", same)
			}
			if tc.want == nil {
				if err != nil {
					t.Fatalf("ConfigMismatch = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrConfigMismatch) {
				t.Fatalf("ConfigMismatch = %v, want ErrConfigMismatch", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			if tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
				t.Errorf("%q speaks of %q, which is the same", err, tc.notWant)
			}
		})
	}
}

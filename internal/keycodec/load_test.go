package keycodec

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// TestLoadValue: loads round-trip through a loads key's value; no loads is
// "{}"; a figure no balancer could use, an empty shard ID or a value over
// shard.MaxLoadBytes is refused naming the worker and the fault; a value
// that is not the object is refused saying so.
func TestLoadValue(t *testing.T) {
	load := map[shard.ID]float64{"stream/shard-000": 12.5, "stream/shard-007": 0.0123}
	value, err := EncodeLoad("w1", load)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeLoad(value)
	if err != nil || !maps.Equal(back, load) {
		t.Fatalf("round trip of %s: %v, %v; want %v", value, back, err, load)
	}
	if value, err := EncodeLoad("w1", nil); err != nil || string(value) != "{}" {
		t.Fatalf("no loads: %s, %v; want {}", value, err)
	}

	big := map[shard.ID]float64{} // about 33 bytes a shard: over the bound
	for i := range shard.MaxLoadBytes / 30 {
		big[shard.ID(fmt.Sprintf("stream/shard-%05d", i))] = 0.0123456789
	}
	for _, tc := range []struct {
		name string
		load map[shard.ID]float64
		says string
	}{
		{"negative", map[shard.ID]float64{"s-001": -1}, "has load -1"},
		{"NaN", map[shard.ID]float64{"s-001": math.NaN()}, "has load NaN"},
		{"infinite", map[shard.ID]float64{"s-001": math.Inf(1)}, "has load +Inf"},
		{"empty ID", map[shard.ID]float64{"": 1}, "a shard id is empty"},
		{"too big", big, "a loads key may hold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := EncodeLoad("w9", tc.load)
			if !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), `"w9"`) {
				t.Fatalf("EncodeLoad = %v; want %v naming w9 and saying %s", err, shard.ErrInvalidArgument, tc.says)
			}
		})
	}

	for _, bad := range []string{`not json`, `[1]`, `{"s-001":"1"}`} {
		if load, err := DecodeLoad([]byte(bad)); err == nil || !strings.Contains(err.Error(), "malformed loads value") {
			t.Errorf("DecodeLoad(%s) = %v, %v; want it refused as malformed", bad, load, err)
		}
	}
}

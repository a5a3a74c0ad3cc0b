package keycodec

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// TestStandbyValue: a standby key's value round-trips; 10,000 standbys
// of a 100,000-shard fleet with six-digit offsets fit a report key (a
// join into a fleet of 10 prepares that many at once); shards outside
// the fleet and offsets below -1 are refused, and a value that does not
// add up is read as an error naming what is wrong.
func TestStandbyValue(t *testing.T) {
	cfg := shard.Config{Shards: 100_000}
	ids := cfg.IDs()
	states := map[shard.ID]shard.StandbyState{}
	for k := 0; k < 100_000; k += 10 {
		states[ids[k]] = shard.StandbyState{Applied: int64(100_000 + k), Ready: k%20 == 0}
	}
	states[ids[3]] = shard.StandbyState{Applied: -1}
	b, err := EncodeStandby(cfg, "w", states)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > shard.MaxLoadBytes/2 {
		t.Errorf("%d standbys take %d bytes, want well under the %d a report key holds", len(states), len(b), shard.MaxLoadBytes)
	}
	back, err := DecodeStandby(cfg, b)
	if err != nil || !maps.Equal(back, states) {
		t.Fatalf("round trip: %d states, %v; want the %d written", len(back), err, len(states))
	}
	if _, err := EncodeStandby(cfg, "w", map[shard.ID]shard.StandbyState{"stream/shard-x": {}}); !errors.Is(err, shard.ErrUnknownShard) {
		t.Errorf("a shard outside the fleet: %v, want ErrUnknownShard", err)
	}
	if _, err := EncodeStandby(cfg, "w", map[shard.ID]shard.StandbyState{ids[0]: {Applied: -2}}); !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), "-2") {
		t.Errorf("applied -2: %v, want ErrInvalidArgument naming it", err)
	}
	for value, want := range map[string]string{
		`[]`:                             "malformed",
		`{"shards":"0-1","applied":[5]}`: "2 shards and 1 applied",
		`{"shards":"0","ready":"1","applied":[5]}`: "ready but not among",
		`{"shards":"0","applied":[-3]}`:            "-3",
		`{"shards":"100000","applied":[1]}`:        "100000",
	} {
		if _, err := DecodeStandby(cfg, []byte(value)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeStandby(%s) = %v, want an error saying %q", value, err, want)
		}
	}
}

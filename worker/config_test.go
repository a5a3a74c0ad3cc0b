package worker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestConfigValidateSettingsLeavesOutTheDependencies: ValidateSettings
// names every wrong value and nothing about the missing coordinator, store
// and handler; Validate names those too, all in one error.
func TestConfigValidateSettingsLeavesOutTheDependencies(t *testing.T) {
	c := Config{ID: "a/b", Fleet: shard.Config{Shards: -1}, DrainTimeout: -time.Second,
		Policy: shard.LeasePolicy{TTL: time.Second, RenewEvery: time.Second}}
	values := []string{`worker id "a/b"`, "shard count -1", "exceeds ttl 1s", "drain timeout -1s must not be negative (zero means the default, 10s)"}
	deps := []string{"coordinator is nil", "offset store is nil", "handler is nil"}
	settings, all := c.ValidateSettings(), c.Validate()
	for _, err := range []error{settings, all} {
		if !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("%v, want ErrInvalidConfig", err)
		}
	}
	for _, w := range values {
		if !strings.Contains(settings.Error(), w) || !strings.Contains(all.Error(), w) {
			t.Errorf("%q is not named by both:\n settings: %v\n all: %v", w, settings, all)
		}
	}
	for _, w := range deps {
		if strings.Contains(settings.Error(), w) || !strings.Contains(all.Error(), w) {
			t.Errorf("%q: want it from Validate only:\n settings: %v\n all: %v", w, settings, all)
		}
	}
	if err := (Config{ID: "w", Fleet: shard.Config{Shards: 1}}).ValidateSettings(); err != nil {
		t.Errorf("settings without dependencies: %v", err)
	}
}

// TestConfigZeroIsTheDefaultAndNoColdStartGatherIsNone: a zero duration is
// the documented default; NoColdStartGather is the one way to say none.
func TestConfigZeroIsTheDefaultAndNoColdStartGatherIsNone(t *testing.T) {
	d := Config{}.withDefaults()
	if d.DrainTimeout != DefaultDrainTimeout || d.ColdStartGather != DefaultColdStartGather || d.WatchCoalesce != DefaultWatchCoalesce ||
		d.Policy != shard.DefaultPolicy {
		t.Errorf("zero values became %+v", d)
	}
	if g := (Config{ColdStartGather: NoColdStartGather}).withDefaults().ColdStartGather; g >= 0 {
		t.Errorf("NoColdStartGather became %v, want a gather that never waits", g)
	}
}

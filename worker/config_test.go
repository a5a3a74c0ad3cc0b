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

// TestDrainBeforeStopBounds: a negative or over-an-hour drain before the
// stop is refused naming its value, and so is one beside a rejoin grace
// (a restart keeps its shards: there is nothing to drain).
func TestDrainBeforeStopBounds(t *testing.T) {
	base := Config{ID: "w", Fleet: shard.Config{Shards: 1}}
	for _, tc := range []struct {
		drain, grace time.Duration
		want         string
	}{
		{-time.Second, 0, "drain before stop -1s"},
		{2 * time.Hour, 0, "drain before stop 2h0m0s"},
		{time.Minute, time.Minute, "set one of them"},
	} {
		c := base
		c.DrainBeforeStop, c.RejoinGrace = tc.drain, tc.grace
		if err := c.ValidateSettings(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("drain %v, grace %v: %v, want an error naming %q", tc.drain, tc.grace, err, tc.want)
		}
	}
	c := base
	c.DrainBeforeStop = time.Minute
	if err := c.ValidateSettings(); err != nil {
		t.Errorf("a minute's drain before the stop: %v", err)
	}
}

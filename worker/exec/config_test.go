package exec

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestConfigValidateNamesEveryProblem: every wrong field is named, with
// its value, in one error.
func TestConfigValidateNamesEveryProblem(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		wants []string
	}{
		{"empty", Config{}, []string{"no command", "shard count 0"}},
		{"all at once", Config{Argv: []string{"no-such-program-anywhere"}, Fleet: shard.Config{Shards: -1}, DrainGrace: -time.Second},
			[]string{`command "no-such-program-anywhere"`, "shard count -1", "drain grace -1s must not be negative"}},
		{"empty program", Config{Argv: []string{""}, Fleet: shard.Config{Shards: 1}}, []string{"the program name is empty"}},
		{"bad shard name", Config{Argv: []string{"true"}, Fleet: shard.Config{Shards: 1, Name: "/x"}}, []string{`shard name "/x"`}},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Validate = %v, want ErrInvalidConfig", tc.name, err)
			continue
		}
		for _, w := range tc.wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %q", tc.name, err, w)
			}
		}
		if _, err := New(tc.cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want the same refusal", tc.name, err)
		}
	}
	if err := (Config{Argv: []string{"true"}, Fleet: shard.Config{Shards: 1}}).Validate(); err != nil {
		t.Errorf("a minimal config: %v", err)
	}
}

// TestNewKeepsItsOwnCopy: the caller's Config is not modified, and a later
// change to its slices does not reach the Supervisor.
func TestNewKeepsItsOwnCopy(t *testing.T) {
	argv := []string{"true", "a"}
	cfg := Config{Argv: argv, Env: []string{"A=1"}, Fleet: shard.Config{Shards: 2}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DrainGrace != 0 || cfg.Logger != nil || cfg.Stdout != nil || cfg.Fleet.Name != "" {
		t.Errorf("New filled the caller's Config: %+v", cfg)
	}
	argv[1], cfg.Env[0] = "changed", "A=2"
	if !slices.Equal(s.cfg.Argv, []string{"true", "a"}) || !slices.Equal(s.cfg.Env, []string{"A=1"}) {
		t.Errorf("the supervisor's argv %q and env %q follow the caller's slices", s.cfg.Argv, s.cfg.Env)
	}
	if s.cfg.DrainGrace != DefaultDrainGrace {
		t.Errorf("DrainGrace %v, want the default %v", s.cfg.DrainGrace, DefaultDrainGrace)
	}
}

package fleetkeys

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/shardlease/shardlease/internal/keycodec"
	"github.com/shardlease/shardlease/shard"
)

// The values every engine writes the same way, checked before anything is
// written.

// PrefixProblem is what is wrong with a fleet's key prefix, "" if nothing:
// one rule for every engine, so that a fleet can move between them.
func PrefixProblem(prefix string) string {
	switch {
	case prefix == "":
		return "prefix is empty: name the fleet's key prefix, e.g. shardlease/orders"
	case strings.HasPrefix(prefix, "/") || strings.HasSuffix(prefix, "/") || strings.ContainsAny(prefix, " \t\n"):
		return fmt.Sprintf("prefix %q must not start or end with '/' or contain spaces", prefix)
	case !utf8.ValidString(prefix) || strings.IndexByte(prefix, 0) >= 0:
		return fmt.Sprintf("prefix %q must be valid UTF-8 without NUL bytes", prefix)
	}
	return ""
}

// ConfigValue is Fleet.Configure's config and its stored value: cfg
// validated and normalized, in generation 0 (only RaiseGeneration raises
// it; a config created again under a running fleet starts there too).
func ConfigValue(cfg shard.Config) (shard.Config, []byte, error) {
	if err := cfg.Validate(); err != nil {
		return shard.Config{}, nil, err
	}
	cfg = cfg.Normalize()
	cfg.Generation = 0
	value, err := json.Marshal(cfg)
	return cfg, value, err
}

// PolicyValue is Fleet.SetPolicy's stored value of p, once Validate
// accepts it.
func PolicyValue(p shard.BalancePolicy) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	value, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode balance policy %v: %w", p, err)
	}
	return value, nil
}

// LoadReport is Members.ReportLoad's value (keycodec.EncodeLoad's JSON)
// and the shards it names; an empty worker is CheckReport's to refuse.
func LoadReport(worker string, load map[shard.ID]float64) ([]byte, error) {
	value, err := keycodec.EncodeLoad(worker, load)
	if err != nil && worker != "" {
		return nil, err
	}
	return value, nil
}

// StandbyReport is Members.ReportStandby's value for the fleet set runs
// (nil: a report of nothing, whose key is deleted); an empty worker is
// CheckReport's to refuse.
func StandbyReport(set *ShardSet, worker string, states map[shard.ID]shard.StandbyState) ([]byte, error) {
	if set == nil && worker != "" {
		return nil, fmt.Errorf("%w: report standby of worker %q: the fleet is not configured yet (Fleet.Configure first)", shard.ErrInvalidArgument, worker)
	}
	if len(states) == 0 || worker == "" {
		return nil, nil
	}
	return keycodec.EncodeStandby(set.Config, worker, states)
}

// Sealed is one worker's assignment as Assign writes it: its key's value
// and the assignor's memory beside it, stamped with one seal (nil Value:
// both keys are deleted).
type Sealed struct {
	Worker        string
	Value, Memory []byte
}

// AssignWorkers are the workers of an Assign's set in sorted order; an
// empty one wraps shard.ErrInvalidArgument.
func AssignWorkers(set map[string]*shard.Assignment) ([]string, error) {
	workers := slices.Sorted(maps.Keys(set))
	if len(workers) > 0 && workers[0] == "" {
		return nil, fmt.Errorf("%w: assign: worker id is empty", shard.ErrInvalidArgument)
	}
	return workers, nil
}

// SealAssignments is Assignments.Assign's values for set, workers in
// sorted order, each stamped with epoch and sealed (SealValue). An empty
// worker, or a fleet with no config (fleet nil, stored at configKey),
// wraps shard.ErrInvalidArgument.
func SealAssignments(fleet *ShardSet, configKey string, epoch shard.Token, set map[string]*shard.Assignment) ([]Sealed, error) {
	workers, err := AssignWorkers(set)
	if err != nil {
		return nil, err
	}
	if fleet == nil {
		return nil, fmt.Errorf("%w: assign: the fleet has no config at %q yet (Configure first)", shard.ErrInvalidArgument, configKey)
	}
	out := make([]Sealed, len(workers))
	for i, w := range workers {
		out[i].Worker = w
		a := set[w]
		if a == nil {
			continue
		}
		v := *a
		v.Epoch = epoch
		value, err := keycodec.EncodeAssignment(fleet.Config, v)
		if err != nil {
			return nil, fmt.Errorf("assign: worker %q: %w", w, err)
		}
		seal := NewSeal()
		out[i].Value, out[i].Memory = SealValue(value, seal), SealMemory(v.Memory, seal)
	}
	return out, nil
}

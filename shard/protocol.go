package shard

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Protocol is the coordination protocol this build speaks, recorded in the
// fleet's config (P/config, "protocol"): protocol 3, release 0.1.0's, the
// first released. Its keys and their values are listed in docs/design.md,
// "Key schema". (1 and 2 were development protocols, never
// released.)
//
// A fleet runs one protocol. A worker refuses to join a fleet whose stored
// config names another (Configure fails with ErrConfigMismatch, see
// ConfigMismatch).
const Protocol = 3

// Release is the release this build is, or, with a -dev suffix, the one it
// is developing towards: the version a worker writes in its member key
// (Member.Version, with the commit when the build knows it) and shows in
// its status, metrics and `version` commands, beside the Protocol it
// speaks (Member.Protocol).
const Release = "0.2.0-dev"

// StepGenerations is the protocol step of token generations: the worker
// takes each lock in the fleet's generation (the config's Generation,
// checked in the same transaction, recorded as Owner.Gen) and reads every
// lock's token as MakeToken(Owner.Gen, index). A worker without it
// (release 0.1.0) reads a token as the bare index: in a fleet whose
// generation was raised its fences are refused and it owns nothing, so
// `shardctl recover` refuses to raise the generation while such a worker
// is live.
const StepGenerations = "generations"

// StepHistory is the protocol step of the ownership history: the
// assignor records P/history (History.Record) only while every live member
// speaks it, because release 0.1.0 lists that key among a snapshot's
// problems, as a foreign key under the prefix.
const StepHistory = "history"

// StepZones is the protocol step of zones: the assignor places shards in
// proportion to each zone's capacity (Member.Zone) only while every live
// member speaks it, so that during a roll from a release that knows no
// zones an assignor of either release plans the same.
const StepZones = "zones"

// StepRules is the protocol step of placement rules
// (BalancePolicy.Rules): a policy with rules is written, and the assignor
// follows its rules, only while every live member speaks it, because
// release 0.1.0 reads P/policy strictly and cannot read one with rules.
const StepRules = "rules"

// Steps returns the protocol steps this build speaks beyond Protocol,
// which it writes into its member key (Member.Steps). A feature that
// needs a step switches on only when every live member has it.
func Steps() []string {
	return []string{StepGenerations, StepHistory, StepZones, StepRules, StepStandbys, StepReshard}
}

// AllSpeak reports whether every live member of s speaks step.
func (s Snapshot) AllSpeak(step string) bool {
	for _, m := range s.Members {
		if m.Live() && !m.HasStep(step) {
			return false
		}
	}
	return true
}

// HasStep reports whether the member's worker speaks step.
func (m Member) HasStep(step string) bool { return slices.Contains(m.Steps, step) }

// SameFleet reports whether a worker that brings config c may join a fleet
// that stored config o: c names o's first shard set or its current one
// (Current), and c's protocol runs o's (a resharded fleet records
// ProtocolResharded, which this build runs).
// Either may be the stored one.
func (c Config) SameFleet(o Config) bool {
	return ConfigMismatch(o, c) == nil || ConfigMismatch(c, o) == nil
}

// Same reports whether two stored configs are the same in every field
// but Generation: the same shard sets, protocol and layouts.
func (c Config) Same(o Config) bool {
	c, o = c.Normalize(), o.Normalize()
	return c.Equal(o) && c.Protocol == o.Protocol && reflect.DeepEqual(c.Layouts, o.Layouts)
}

// ConfigMismatch returns nil when a worker that brings mine may join a
// fleet that stored stored, and otherwise an error wrapping
// ErrConfigMismatch that names both shard sets, both protocols, or both.
// Coordinators return it from Configure, so every backend refuses in the
// same words.
func ConfigMismatch(stored, mine Config) error {
	stored, mine = stored.Normalize(), mine.Normalize()
	var parts []string
	shards, name := stored.Current()
	if !stored.Equal(mine) && (mine.Shards != shards || mine.Name != name) {
		now := ""
		if len(stored.Layouts) > 0 {
			now = fmt.Sprintf(" (resharded: it runs %d named %q now)", shards, name)
		}
		parts = append(parts, fmt.Sprintf("the fleet has %d shards named %q%s, this config has %d shards named %q",
			stored.Shards, stored.Name, now, mine.Shards, mine.Name))
	}
	if !speaksStored(stored, mine.Protocol) {
		parts = append(parts, fmt.Sprintf("the fleet runs protocol %d and this worker protocol %d: no mixed fleets — stop the whole fleet and remove its config before starting protocol %d workers on it, or use another prefix",
			stored.Protocol, mine.Protocol, mine.Protocol))
	}
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrConfigMismatch, strings.Join(parts, "; "))
}

package shard

import (
	"fmt"
	"slices"
	"strings"
)

// ID names one shard, e.g. "stream/shard-007". IDs are compared as strings;
// the fleet's Config generates them so that their order is the numeric order.
type ID string

// Token is a fencing token: the fleet's generation and the coordinator's
// write index of the write that granted a claim (see MakeToken). For one
// shard, a later owner always holds a higher token, also after the
// coordinator lost its history, once the generation was raised.
type Token uint64

// MaxShards bounds the shard count of a fleet: 131,072, room for a fleet of
// 100,000 shards. The bound exists so that a typo (an extra zero) is refused
// instead of creating a million lock keys, and so that a worker's
// assignment, however scattered its shards, stays inside Consul's 512 KiB
// value limit (every other shard of 131,072 encodes in about 400 KB).
const MaxShards = 1 << 17

// Config is the fleet's shard set and settings, written once under the fleet's
// prefix and checked by every worker that joins.
type Config struct {
	// Shards is the number of shards, 1..MaxShards.
	Shards int `json:"shards"`
	// Name is the shard name stem; shard i is named Name + "-" + i padded to
	// at least three digits. Default "stream/shard".
	Name string `json:"name"`
	// Protocol is the coordination protocol of the fleet (see Protocol).
	// Zero means this build's Protocol, in a worker's config and in a
	// stored one (a P/config written by hand without it).
	Protocol int `json:"protocol"`
	// Generation orders the fleet's tokens before the coordinator's index
	// (see MakeToken). 0 for a new fleet; only Fleet.RaiseGeneration
	// changes it, and a worker's config does not carry it: Equal and
	// SameFleet ignore it.
	Generation uint32 `json:"generation,omitempty"`
	// Layouts are the fleet's reshards, oldest first (see Layout): empty
	// for a fleet never resharded. Shards and Name stay the fleet's first
	// shard set; Current is the one it runs. Only Fleet.SetLayouts
	// changes them, and a worker's config does not carry them.
	Layouts []Layout `json:"layouts,omitempty"`
}

// DefaultName is the shard name stem used when Config.Name is empty.
const DefaultName = "stream/shard"

// Normalize returns c with defaults filled in (Name, Protocol). It does
// not modify c.
func (c Config) Normalize() Config {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Protocol == 0 {
		c.Protocol = Protocol
	}
	return c
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var problems []string
	if c.Shards < 1 || c.Shards > MaxShards {
		problems = append(problems, fmt.Sprintf("shard count %d is out of range: want 1..%d", c.Shards, MaxShards))
	}
	if n := c.Normalize().Name; strings.ContainsAny(n, " \t\n") || strings.HasPrefix(n, "/") || strings.HasSuffix(n, "/") {
		problems = append(problems, fmt.Sprintf("shard name %q must not contain spaces or start or end with '/'", n))
	}
	if c.Generation > MaxGeneration {
		problems = append(problems, fmt.Sprintf("generation %d is above the highest, %d", c.Generation, MaxGeneration))
	}
	problems = append(problems, c.validateLayouts()...)
	if c.Protocol < 0 {
		problems = append(problems, fmt.Sprintf("protocol %d must not be negative (0 means this build's, %d)", c.Protocol, Protocol))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(problems, "; "))
	}
	return nil
}

// Equal reports whether two configurations describe the same first shard
// set (Shards and Name). It does not compare Protocol (SameFleet does) nor
// Layouts (a worker's config has none: see SameFleet).
func (c Config) Equal(o Config) bool {
	c, o = c.Normalize(), o.Normalize()
	return c.Shards == o.Shards && c.Name == o.Name
}

// IDs returns the shard IDs the fleet runs, sorted: its current layout's,
// and during a reshard its parents' too (see Segments).
func (c Config) IDs() []ID {
	var ids []ID
	for _, s := range c.Segments() {
		for i := range s.Shards {
			ids = append(ids, s.ID(i))
		}
	}
	if len(c.Layouts) > 0 {
		slices.Sort(ids) // a later layout's name may sort before an earlier's
	}
	return ids
}

// Claim is a granted lock on one shard: the shard and the fencing token of
// the write that granted it.
type Claim struct {
	Shard ID    `json:"shard"`
	Token Token `json:"token"`
}

func (c Claim) String() string { return fmt.Sprintf("%s@%d", c.Shard, c.Token) }

package keycodec

import (
	"fmt"
	"strings"

	"github.com/shardlease/shardlease/shard"
)

// names is how a fleet names the shards it runs, as shard.Config.IDs
// writes them: one segment per layout it runs (its current one, and during
// a reshard the parents' too), each Name + "-" + the index within it
// zero-padded to its width; the index in a set is the segment's Base plus
// that. TestSetEncodingIDs holds the two to the same IDs across every
// padding width.
type names struct {
	segs []shard.Segment // in index order
}

// namesOf returns c's naming.
func namesOf(c shard.Config) names { return names{segs: c.Segments()} }

// index returns the index of id among the fleet's shards. It is the inverse
// of id: an ID is accepted only in exactly the form IDs writes it.
func (n names) index(id shard.ID) (int, error) {
	for _, s := range n.segs {
		if i, ok := s.Index(id); ok {
			return s.Base + i, nil
		}
	}
	return 0, fmt.Errorf("%w: %q is not one of the fleet's shards (%s)", shard.ErrUnknownShard, id, n)
}

// String describes the shard sets, for errors: "128 shards stream/shard-…".
func (n names) String() string {
	var parts []string
	for _, s := range n.segs {
		parts = append(parts, fmt.Sprintf("%d shards %s-…", s.Shards, s.Name))
	}
	return strings.Join(parts, " and ")
}

// has reports whether index i is one of the fleet's shards.
func (n names) has(i int) bool {
	for _, s := range n.segs {
		if s.Base <= i && i < s.Base+s.Shards {
			return true
		}
	}
	return false
}

// Naming tells a fleet's shard IDs from others, as many times as asked
// without allocating: made once per config (NamingOf).
type Naming struct{ n names }

// NamingOf is c's naming.
func NamingOf(c shard.Config) Naming { return Naming{namesOf(c)} }

// Index returns the index of id among the fleet's shards, or an error
// wrapping shard.ErrUnknownShard when id is not one of them exactly as
// Config.IDs writes it.
func (n Naming) Index(id shard.ID) (int, error) { return n.n.index(id) }

// id returns the ID of shard i exactly as IDs formats it; i must be one
// of the fleet's (has).
func (n names) id(i int) shard.ID {
	for _, s := range n.segs {
		if s.Base <= i && i < s.Base+s.Shards {
			return s.ID(i - s.Base)
		}
	}
	return ""
}

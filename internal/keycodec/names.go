package keycodec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shardlease/shardlease/shard"
)

// names is how a fleet names its shards, as shard.Config.IDs writes them:
// Name + "-" + the index zero-padded to the width of the last index, at
// least three digits. The format is a line of Config's documented
// behaviour, so it is rebuilt here from Config's exported fields rather
// than exported from shard as an index method no user needs;
// TestSetEncodingIDs holds the two to the same IDs across every padding
// width.
type names struct {
	name   string
	shards int
	width  int // digits of an index, padded
}

// namesOf returns c's naming (c normalized, so the default name applies).
func namesOf(c shard.Config) names {
	c = c.Normalize()
	return names{name: c.Name, shards: c.Shards, width: max(len(strconv.Itoa(c.Shards-1)), 3)}
}

// index returns the index of id among the fleet's shards. It is the inverse
// of id: an ID is accepted only in exactly the form IDs writes it.
func (n names) index(id shard.ID) (int, error) {
	s := string(id)
	// Every index is padded to the same width, so an ID of the fleet is
	// its name, a dash and exactly width digits below the shard count.
	ok := len(s) == len(n.name)+1+n.width && strings.HasPrefix(s, n.name) && s[len(n.name)] == '-'
	i := 0
	for _, c := range []byte(s[min(len(n.name)+1, len(s)):]) {
		if !ok || c < '0' || c > '9' {
			ok = false
			break
		}
		i = i*10 + int(c-'0')
	}
	if !ok || i >= n.shards {
		return 0, fmt.Errorf("%w: %q is not one of the %d shards %s-…", shard.ErrUnknownShard, id, n.shards, n.name)
	}
	return i, nil
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

// id returns the ID of shard i exactly as IDs formats it.
func (n names) id(i int) shard.ID {
	digits := strconv.Itoa(i)
	return shard.ID(n.name + "-" + strings.Repeat("0", max(n.width-len(digits), 0)) + digits)
}

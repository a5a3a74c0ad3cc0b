package rebalance

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/shardlease/shardlease/shard"
)

// maxProblems bounds how many bad values an error lists, so that a shard set
// duplicated wholesale does not produce a megabyte-long message.
const maxProblems = 8

// sortIDs returns sorted copies of ms and ss and a description of every
// empty or duplicate ID among them (each duplicate named once).
func sortIDs(ms []Member, ss []shard.ID) ([]Member, []shard.ID, []string) {
	members := slices.Clone(ms)
	slices.SortFunc(members, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	shards := slices.Clone(ss)
	slices.Sort(shards)

	var problems []string
	for i, m := range members {
		switch {
		case m.ID == "" && i == 0:
			problems = append(problems, "empty member ID")
		case m.ID != "" && i > 0 && members[i-1].ID == m.ID && (i < 2 || members[i-2].ID != m.ID):
			problems = append(problems, fmt.Sprintf("duplicate member ID %q", m.ID))
		}
	}
	for i, s := range shards {
		switch {
		case s == "" && i == 0:
			problems = append(problems, "empty shard ID")
		case s != "" && i > 0 && shards[i-1] == s && (i < 2 || shards[i-2] != s):
			problems = append(problems, fmt.Sprintf("duplicate shard ID %q", s))
		}
	}
	return members, shards, problems
}

// invalid returns an error wrapping ErrInvalidInput that lists problems, at
// most maxProblems of them and then how many more there were.
func invalid(problems []string) error {
	if extra := len(problems) - maxProblems; extra > 0 {
		problems = append(problems[:maxProblems], fmt.Sprintf("and %d more", extra))
	}
	return fmt.Errorf("%w: %s", ErrInvalidInput, strings.Join(problems, "; "))
}

package history

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type cp = offsets.Checkpoint

const a = shard.ID("stream/shard-000")

// The checker must pass a correct history and catch each kind of bad one;
// a checker that passes everything would make the suite worthless.
func TestCheckHistory(t *testing.T) {
	stale := func(tok, floor shard.Token) error {
		return &offsets.StaleTokenError{Shard: a, Token: tok, Floor: floor}
	}
	c := func(tok shard.Token, off int64, start, end uint64, err error) Op {
		return Op{Shard: a, Token: tok, Offset: off, Start: start, End: end, Err: err}
	}
	f := func(tok shard.Token, start, end uint64, err error) Op {
		return Op{Shard: a, Fence: true, Token: tok, Start: start, End: end, Err: err}
	}
	tests := []struct {
		name  string
		ops   []Op
		final cp
		want  string // substring of an expected problem; "" for none
	}{
		{name: "sequential, correct",
			ops:   []Op{c(5, 100, 1, 2, nil), f(7, 3, 4, nil), c(5, 110, 5, 6, stale(5, 7)), c(7, 120, 7, 8, nil)},
			final: cp{Offset: 120, Token: 7, Floor: 7}},
		{name: "overlapping, either order is fine",
			ops:   []Op{c(5, 100, 1, 4, nil), c(7, 120, 2, 3, nil)},
			final: cp{Offset: 120, Token: 7, Floor: 7}},
		{name: "overlapping rejection is justified",
			ops:   []Op{c(5, 100, 1, 4, stale(5, 7)), c(7, 120, 2, 3, nil)},
			final: cp{Offset: 120, Token: 7, Floor: 7}},
		{name: "only fences",
			ops:   []Op{f(3, 1, 2, nil), f(2, 3, 4, stale(2, 3))},
			final: cp{Floor: 3}},
		{name: "stale write accepted",
			ops:   []Op{c(7, 120, 1, 2, nil), c(5, 100, 3, 4, nil)},
			final: cp{Offset: 120, Token: 7, Floor: 7},
			want:  "stale write accepted"},
		{name: "stale write accepted after a fence",
			ops:   []Op{f(7, 1, 2, nil), c(5, 100, 3, 4, nil)},
			final: cp{Offset: 100, Token: 5, Floor: 7},
			want:  "stale write accepted"},
		{name: "floor lost (check and write not atomic)",
			ops:   []Op{c(5, 100, 1, 4, nil), c(7, 120, 2, 3, nil)},
			final: cp{Offset: 100, Token: 5, Floor: 5},
			want:  "final floor 5"},
		{name: "offset from nowhere",
			ops:   []Op{c(5, 100, 1, 2, nil)},
			final: cp{Offset: 99, Token: 5, Floor: 5},
			want:  "not written by any accepted commit"},
		{name: "offset without a commit",
			ops:   []Op{f(5, 1, 2, nil)},
			final: cp{Offset: 3, Floor: 5},
			want:  "no commit was accepted"},
		{name: "rejection without cause",
			ops:   []Op{c(5, 100, 1, 2, nil), c(5, 110, 3, 4, stale(5, 6))},
			final: cp{Offset: 100, Token: 5, Floor: 5},
			want:  "no higher token"},
		{name: "other error",
			ops:   []Op{c(5, 100, 1, 2, nil), c(6, 110, 3, 4, errors.New("disk full"))},
			final: cp{Offset: 100, Token: 5, Floor: 5},
			want:  "unexpected error"},
		{name: "message without the token",
			ops:   []Op{c(7, 120, 1, 2, nil), c(5, 100, 3, 4, offsets.ErrStaleToken)},
			final: cp{Offset: 120, Token: 7, Floor: 7},
			want:  "does not name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(tt.ops, map[shard.ID]cp{a: tt.final})
			switch {
			case tt.want == "" && len(got) > 0:
				t.Fatalf("problems in a correct history: %q", got)
			case tt.want != "" && !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tt.want) }):
				t.Fatalf("problems = %q, want one saying %q", got, tt.want)
			}
		})
	}
}

func TestCheckHistoryMissingFinal(t *testing.T) {
	got := Check([]Op{{Shard: a, Token: 1, Start: 1, End: 2}}, nil)
	if len(got) != 1 || !strings.Contains(got[0], "no final checkpoint") {
		t.Fatalf("problems = %q", got)
	}
}

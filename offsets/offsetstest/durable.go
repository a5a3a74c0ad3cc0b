package offsetstest

import (
	"testing"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// RunDurable checks that checkpoints, floors included, survive Close and a
// reopen. namespace is called once and returns an OpenFunc bound to one
// fresh namespace: every call of that OpenFunc opens the same file, prefix or
// schema again. (A directory would do for a file backend, but not for a
// network one, hence a function.)
func RunDurable(t *testing.T, namespace func(tb testing.TB) OpenFunc) {
	open := namespace(t)
	c := shard.ID("stream/shard-002")

	first := []step{commit(a, 5, 100), fence(b, 9), commit(c, 3, 7), commit(c, 4, 8)}
	afterFirst := map[shard.ID]cp{
		a: {Offset: 100, Token: 5, Floor: 5}, b: {Floor: 9}, c: {Offset: 8, Token: 4, Floor: 4},
	}
	second := []step{commit(b, 8, 1).stale(9), commit(a, 6, 101), fence(c, 4)}
	afterSecond := map[shard.ID]cp{
		a: {Offset: 101, Token: 6, Floor: 6}, b: {Floor: 9}, c: {Offset: 8, Token: 4, Floor: 4},
	}

	st := mustOpen(t, open)
	script{steps: first, want: afterFirst}.run(t, st)
	closeOrFail(t, st)

	st = mustOpen(t, open)
	script{want: afterFirst}.run(t, st) // everything survived, floors included
	script{steps: second, want: afterSecond}.run(t, st)
	closeOrFail(t, st)

	st = mustOpen(t, open)
	script{want: afterSecond}.run(t, st)
}

func closeOrFail(t *testing.T, st offsets.Store) {
	t.Helper()
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

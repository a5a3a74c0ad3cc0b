package admin_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/shard"
)

// deleteShardKey: a held key and a missing one are refused and nothing is
// written; a free key of the fleet is deleted, and the shard's next owner
// still gets a higher token.
func deleteShardKey(t *testing.T, e *env) {
	ids := e.configure(4)
	e.join("w1", ids[:2]...)
	ctx := t.Context()
	before := e.snapshot().Index
	for _, tc := range []struct {
		id   shard.ID
		want error
		msg  string
	}{
		{ids[0], admin.ErrShardHeld, `stream/shard-000 is held by session`},
		{ids[3], admin.ErrNoShardKey, "stream/shard-003 has no key in fleet orders"},
		{"stream/shard-999", admin.ErrNoShardKey, `no key for "stream/shard-999" in fleet orders`},
		{"", admin.ErrNoShardKey, "empty shard ID"},
	} {
		if _, err := e.op.DeleteShard(ctx, e.keys, tc.id); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("DeleteShard(%q): %v, want %v saying %q", tc.id, err, tc.want, tc.msg)
		}
	}
	e.unchanged(before, "a refused delete")
	if st, ok := e.snapshot().Shard(ids[0]); !ok || st.Session != e.sessions["w1"] {
		t.Fatalf("a refused delete took a held lock: %+v", st)
	}

	e.release("w1", ids[1])
	old, _ := e.snapshot().Shard(ids[1])
	d, err := e.op.DeleteShard(ctx, e.keys, ids[1])
	if err != nil || !d.InFleet || d.Token != old.Token || d.Shard != ids[1] {
		t.Fatalf("DeleteShard of a free key = %+v, %v; want in fleet with token %d", d, err, old.Token)
	}
	if st, ok := e.snapshot().Shard(ids[1]); ok {
		t.Fatalf("the key is still there: %+v", st)
	}
	if _, err := e.op.DeleteShard(ctx, e.keys, ids[1]); !errors.Is(err, admin.ErrNoShardKey) {
		t.Errorf("DeleteShard twice: %v, want ErrNoShardKey", err)
	}
	e.acquire("w1", ids[1])
	if st, _ := e.snapshot().Shard(ids[1]); st.Token <= old.Token {
		t.Errorf("the next owner's token %d is not above the deleted key's %d", st.Token, old.Token)
	}

	// A worker that acquires the shard between the operator's listing and
	// its delete keeps it: the coordinator refuses the delete.
	e.release("w1", ids[1])
	racing := admin.DeleterFunc(func(ctx context.Context, id shard.ID) (bool, error) {
		e.acquire("w1", id)
		return e.keys.DeleteFreeShard(ctx, id)
	})
	if _, err := e.op.DeleteShard(ctx, racing, ids[1]); !errors.Is(err, admin.ErrShardHeld) || !errors.Is(err, shard.ErrKeyHeld) {
		t.Errorf("a delete racing an acquire: %v, want ErrShardHeld", err)
	}
	if st, ok := e.snapshot().Shard(ids[1]); !ok || st.Session != e.sessions["w1"] {
		t.Fatalf("a delete racing an acquire took the lock: %+v", st)
	}

	// The deleter's failures: the key gone meanwhile, a refused write.
	e.release("w1", ids[1])
	gone := admin.DeleterFunc(func(context.Context, shard.ID) (bool, error) { return false, nil })
	if _, err := e.op.DeleteShard(ctx, gone, ids[1]); !errors.Is(err, admin.ErrNoShardKey) {
		t.Errorf("a key deleted meanwhile: %v, want ErrNoShardKey", err)
	}
	refused := admin.DeleterFunc(func(context.Context, shard.ID) (bool, error) { return false, shard.ErrPermissionDenied })
	if _, err := e.op.DeleteShard(ctx, refused, ids[1]); !errors.Is(err, admin.ErrWrite) || !errors.Is(err, shard.ErrPermissionDenied) {
		t.Errorf("a refused delete: %v, want ErrWrite and the coordinator's error", err)
	}
}

// deleteKeyOutsideConfig: a key a hand edit put under P/shards/ outside
// the fleet's shards is listed as a problem until DeleteShard removes it.
func deleteKeyOutsideConfig(t *testing.T, e *env) {
	e.configure(4)
	e.put("shards/stream/shard-0004", `{"worker":"typo"}`)
	d, err := e.op.DeleteShard(t.Context(), e.keys, "stream/shard-0004")
	if err != nil || d.InFleet || !strings.Contains(d.Problem, "not one of the fleet's shards") {
		t.Fatalf("DeleteShard of a key outside the config = %+v, %v", d, err)
	}
	for _, p := range e.snapshot().Problems {
		if strings.Contains(p, "shard-0004") {
			t.Errorf("still a problem after the delete: %s", p)
		}
	}
}

// deleteRefusedWhileOutsideKeysHeld: with the config rewritten smaller
// under a worker that holds the shards beyond it, those keys are its
// locks: neither they nor a stray key are deleted.
func deleteRefusedWhileOutsideKeysHeld(t *testing.T, e *env) {
	ids := e.configure(4)
	e.join("w1", ids...)
	e.put("shards/stray", `{}`)
	e.put("config", `{"shards":2}`)
	before := e.snapshot().Index
	for _, id := range []shard.ID{ids[3], "stray"} {
		if _, err := e.op.DeleteShard(t.Context(), e.keys, id); !errors.Is(err, admin.ErrShardHeld) || !strings.Contains(err.Error(), "restore the config") {
			t.Errorf("DeleteShard(%s) with keys outside the config held: %v, want ErrShardHeld", id, err)
		}
	}
	e.unchanged(before, "a refused delete")
}

package admin_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/admin"
	"github.com/shardlease/shardlease/shard"
)

// resolveShard: a shard is named by its ID or its number; anything else
// is refused naming the fleet's range.
func resolveShard(t *testing.T, e *env) {
	ids := e.configure(8)
	for _, arg := range []string{"3", string(ids[3])} {
		if sh, err := e.op.Shard(t.Context(), arg); err != nil || sh.ID != ids[3] || sh.State != admin.ShardFree {
			t.Errorf("Shard(%q) = %+v, %v; want %s, free", arg, sh, err, ids[3])
		}
	}
	for _, arg := range []string{"8", "-1", "stream/shard-999", ""} {
		_, err := e.op.Shard(t.Context(), arg)
		want := fmt.Sprintf("no shard %q in fleet orders (it has 8 shards: stream/shard-000 … stream/shard-007, or a number 0..7)", arg)
		if !errors.Is(err, admin.ErrUnknownShard) || !strings.Contains(err.Error(), want) {
			t.Errorf("Shard(%q): %v, want ErrUnknownShard saying %q", arg, err, want)
		}
	}
}

// release: the holder's lock is freed with the reason recorded, the rest
// of its shards stay; the next owner is seen with a higher token.
func release(t *testing.T, e *env) {
	ids := e.configure(4)
	w1 := e.join("w1", ids[:2]...)
	e.join("w2")
	ctx := t.Context()
	sh, err := e.op.Shard(ctx, "1")
	if err != nil || sh.State != admin.ShardOwned || sh.Owner != "w1" || sh.Session != w1 || sh.Token == 0 {
		t.Fatalf("Shard(1) = %+v, %v; want owned by w1", sh, err)
	}
	if err := e.op.Release(ctx, sh, ""); err != nil {
		t.Fatal(err)
	}
	s := e.snapshot()
	if st, _ := s.Shard(ids[1]); st.Held() || st.Owner.Released != admin.DefaultReleaseReason {
		t.Errorf("after the release: %+v, want free, released %q", st, admin.DefaultReleaseReason)
	}
	if st, _ := s.Shard(ids[0]); st.Session != w1 {
		t.Errorf("the release took another shard: %+v", st)
	}

	type result struct {
		sh  admin.ShardInfo
		err error
	}
	next := make(chan result, 1)
	go func() {
		sh, err := e.op.WaitNextOwner(ctx, ids[1], sh.Token, nil)
		next <- result{sh, err}
	}()
	e.acquire("w2", ids[1])
	r := <-next
	if r.err != nil || r.sh.Owner != "w2" || r.sh.Token <= sh.Token || r.sh.State != admin.ShardOwned {
		t.Errorf("WaitNextOwner = %+v, %v; want w2 with a token above %d", r.sh, r.err, sh.Token)
	}

	// Nobody takes it: the wait ends with the caller's context.
	sh, _ = e.op.Shard(ctx, "0")
	if err := e.op.Release(ctx, sh, "maintenance"); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancelCause(ctx)
	stop := errors.New("caller gave up")
	cancel(stop)
	if _, err := e.op.WaitNextOwner(cctx, ids[0], sh.Token, nil); !errors.Is(err, admin.ErrNotTaken) || !errors.Is(err, stop) {
		t.Errorf("WaitNextOwner with an ended context: %v, want ErrNotTaken with its cause", err)
	}
	if st, _ := e.snapshot().Shard(ids[0]); st.Owner.Released != "maintenance" {
		t.Errorf("the reason given is not recorded: %+v", st)
	}
}

// releaseRefusals: a free shard, and a shard that changed hands since the
// caller read it, are not released; nothing is written.
func releaseRefusals(t *testing.T, e *env) {
	ids := e.configure(4)
	e.join("w1", ids[0])
	e.join("w2")
	ctx := t.Context()

	free, _ := e.op.Shard(ctx, "3")
	before := e.snapshot().Index
	if err := e.op.Release(ctx, free, ""); !errors.Is(err, admin.ErrShardFree) || !strings.Contains(err.Error(), "stream/shard-003 is already free") {
		t.Errorf("Release of a free shard: %v, want ErrShardFree", err)
	}
	e.unchanged(before, "a refused release")

	seen, _ := e.op.Shard(ctx, "0")
	e.release("w1", ids[0])
	e.acquire("w2", ids[0])
	before = e.snapshot().Index
	if err := e.op.Release(ctx, seen, ""); !errors.Is(err, admin.ErrShardMoved) {
		t.Errorf("Release of a shard that changed hands: %v, want ErrShardMoved", err)
	}
	e.unchanged(before, "a release of a shard that changed hands")
	if st, _ := e.snapshot().Shard(ids[0]); st.Session != e.sessions["w2"] {
		t.Errorf("the new owner lost the shard: %+v", st)
	}

	// The holder's session ends between the check and the release.
	gone := admin.Operator{Coordinator: shard.Intercept(e.coord, sessionEnds), Name: "orders"}
	now, _ := e.op.Shard(ctx, "0")
	if err := gone.Release(ctx, now, ""); !errors.Is(err, admin.ErrOwnerGone) {
		t.Errorf("Release after the owner's session ended: %v, want ErrOwnerGone", err)
	}
}

// sessionEnds makes a coordinator's releases find the session gone.
func sessionEnds(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
	if call.Op == shard.OpRelease {
		return fmt.Errorf("renew: %w", shard.ErrSessionInvalid)
	}
	return invoke(ctx)
}

package worker

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// TestHandMadeClaimCannotCommit: a Claim no worker issued has nothing to
// lose (Lost never closes, Err is nil), and its Commit is refused with an
// error naming the shard, not a panic.
func TestHandMadeClaimCannotCommit(t *testing.T) {
	c := &Claim{Claim: shard.Claim{Shard: "s-007", Token: 3}}
	if c.Lost() != nil || c.Err() != nil {
		t.Fatalf("hand-made claim: Lost %v, Err %v; want nil, nil", c.Lost(), c.Err())
	}
	err := c.Commit(context.Background(), 1)
	if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "s-007") {
		t.Fatalf("Commit of a hand-made claim: %v, want ErrLost naming shard s-007", err)
	}
}

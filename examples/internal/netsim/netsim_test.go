package netsim

import (
	"context"
	"errors"
	"testing"

	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

func TestHostStates(t *testing.T) {
	h := NewHost("h1")
	c := Coordinator(memory.New(), h)
	s := Store{Store: offmem.New(), H: h}
	ctx := context.Background()
	if _, err := c.Fleet().Watch(ctx, 0); err != nil {
		t.Fatalf("up: %v", err)
	}
	for _, st := range []State{Partitioned, Dead} {
		h.Set(st)
		if _, err := c.Fleet().Watch(ctx, 0); !errors.Is(err, shard.ErrUnavailable) || !errors.Is(err, ErrUnreachable) {
			t.Errorf("state %d: Watch = %v, want unreachable", st, err)
		}
		if err := s.Commit(ctx, "s", 1, 1); !errors.Is(err, ErrUnreachable) {
			t.Errorf("state %d: Commit = %v, want unreachable", st, err)
		}
	}
	h.Set(Up)
	if err := s.Commit(ctx, "s", 1, 1); err != nil {
		t.Errorf("up again: %v", err)
	}
}

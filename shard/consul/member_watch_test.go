package consul_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// TestWatchMember covers what the suite cannot reach on the embedded
// coordinator: values an operator wrote by hand, a wait that ends with
// nothing changed, bad arguments and an unreachable agent.
func TestWatchMember(t *testing.T) {
	agent := consultest.StartDev(t)
	const wait = 300 * time.Millisecond
	c := newCoordinator(t, agent, func(cfg *consul.Config) { cfg.WatchWait = wait })
	ctx := t.Context()
	kv := agent.Client(t).KV()
	key := c.Prefix() + "/members/w1"

	for _, tt := range []struct {
		name, value string
		want        []string // in Problem
	}{
		{"not JSON", "w1 is here", []string{key, "malformed member value"}},
		{"another worker's value", `{"id":"w2"}`, []string{key, `names worker "w2", not "w1"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := kv.Put(&api.KVPair{Key: key, Value: []byte(tt.value)}, nil); err != nil {
				t.Fatal(err)
			}
			k, err := c.Members().Watch(ctx, "w1", 0)
			if err != nil {
				t.Fatal(err)
			}
			if !k.Exists || !reflect.DeepEqual(k.Member, shard.MemberState{}) {
				t.Fatalf("WatchMember of %q = %+v, want an existing key and no member", tt.value, k)
			}
			for _, w := range tt.want {
				if !strings.Contains(k.Problem, w) {
					t.Errorf("Problem %q does not say %q", k.Problem, w)
				}
			}
		})
	}

	t.Run("wait ends unchanged", func(t *testing.T) {
		k, err := c.Members().Watch(ctx, "w1", 0)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		again, err := c.Members().Watch(ctx, "w1", k.Index)
		if err != nil || again.Index != k.Index || shard.NextIndex(k.Index, again.Index) != k.Index {
			t.Fatalf("WatchMember(%d) with nothing changed = %+v, %v; want the same index, to wait on again", k.Index, again, err)
		}
		if d := time.Since(start); d < wait-50*time.Millisecond {
			t.Fatalf("WatchMember(%d) returned after %v, before its wait of %v", k.Index, d, wait)
		}
	})

	t.Run("empty id", func(t *testing.T) {
		if _, err := c.Members().Watch(ctx, "", 0); !errors.Is(err, shard.ErrInvalidArgument) {
			t.Fatalf("WatchMember(\"\") = %v, want ErrInvalidArgument", err)
		}
	})

	t.Run("agent unreachable", func(t *testing.T) {
		down, err := consul.New(consul.Config{Address: "127.0.0.1:1", Prefix: "p", RequestTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer down.Close()
		_, err = down.Members().Watch(ctx, "w1", 0)
		if !errors.Is(err, shard.ErrUnavailable) || !strings.Contains(err.Error(), "watch member w1") {
			t.Fatalf("WatchMember on a closed port = %v, want ErrUnavailable naming the call", err)
		}
	})
}

package election_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/election"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// A lock taken from the leader (an operator's release) ends its term with
// ErrLost: its Lead's context ends with that cause, its commits are
// refused from then on, and a candidate leads with a higher token.
func TestLockTakenFromTheLeaderEndsItsTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGroup(t)
		type end struct{ cause, commit error }
		var mu sync.Mutex
		ended := map[string]end{} // instance → how its first term ended
		for i := 1; i <= 3; i++ {
			id := fmt.Sprintf("i%d", i)
			g.startWith(id, func(ctx context.Context, l *election.Leadership) error {
				<-ctx.Done()
				mu.Lock()
				defer mu.Unlock()
				if _, ok := ended[id]; !ok {
					ended[id] = end{context.Cause(ctx), l.Commit(context.Background(), 1)}
				}
				return nil
			})
		}
		settle(5 * time.Second)
		old, st := g.onlyLeader()
		k, err := g.coord.Locks().Watch(t.Context(), g.inst[old].e.Lock(), 0)
		if err != nil || k.Worker != old {
			t.Fatalf("the lock's key: %+v, %v; want held by %s", k, err, old)
		}
		if err := g.coord.Locks().Release(t.Context(), k.Session, []shard.Lock{g.inst[old].e.Lock()}, shard.ReasonOperator); err != nil {
			t.Fatal(err)
		}
		settle(5 * time.Second)
		mu.Lock()
		e := ended[old]
		mu.Unlock()
		if !errors.Is(e.cause, worker.ErrLost) || !errors.Is(e.commit, worker.ErrLost) {
			t.Errorf("old leader's term ended with %v, its commit after it: %v; want ErrLost for both", e.cause, e.commit)
		}
		if _, st2 := g.onlyLeader(); st2.Token <= st.Token {
			t.Errorf("new term's token %d, not above %d", st2.Token, st.Token)
		}
	})
}

func TestNewRefusesNamesThatAreNotARole(t *testing.T) {
	for _, name := range []string{"Scheduler", "shards/s-000", "assignor", "members", "a/b"} {
		_, err := election.New(election.Config{ID: "i1", Name: name, Coordinator: memory.New(),
			Lead: func(context.Context, *election.Leadership) error { return nil }})
		if !errors.Is(err, election.ErrInvalidConfig) || !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
			t.Errorf("New with name %q = %v, want ErrInvalidConfig naming it", name, err)
		}
	}
}

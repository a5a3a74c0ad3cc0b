package memory

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestLoadsKeyCollectedWithMember: a dead member's loads key loses its
// session with it and is deleted in the same write as the member key
// once the grace has passed (the store does not grow with every worker
// that ever reported).
func TestLoadsKeyCollectedWithMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		const grace = 5 * time.Second
		c := New(WithMemberGrace(grace))
		sid, err := c.Sessions().Create(ctx, shard.SessionSpec{Worker: "w", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Members().Join(ctx, sid, shard.Member{ID: "w"}); err != nil {
			t.Fatal(err)
		}
		if err := c.Members().ReportLoad(ctx, sid, "w", map[shard.ID]float64{"s": 1}); err != nil {
			t.Fatal(err)
		}
		if err := c.Sessions().Destroy(ctx, sid); err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		l := c.reports[reportLoads]["w"]
		dead := l != nil && l.session == "" && l.index == c.members["w"].index
		c.mu.Unlock()
		if !dead {
			t.Fatalf("loads key after its session ended: %+v, want it kept without a session, released in the member key's write", l)
		}
		time.Sleep(grace)
		synctest.Wait()
		c.mu.Lock()
		_, member := c.members["w"]
		_, loads := c.reports[reportLoads]["w"]
		c.mu.Unlock()
		if member || loads {
			t.Fatalf("after the grace: member key present %v, loads key present %v; want both deleted", member, loads)
		}
	})
}

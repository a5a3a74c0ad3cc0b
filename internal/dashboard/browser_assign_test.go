package dashboard_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardlease/shardlease/assignor"
	"github.com/shardlease/shardlease/internal/dashboard"
	"github.com/shardlease/shardlease/shard"
)

// TestAssignmentsInChromium: a fleet set up by hand where what the assignor
// gave differs from what is owned — a owns 2 of the 3 shards it is given,
// b is judged stuck — shows so in the browser: the assignor tile names a
// and its epoch, a's row "2 / 3" and the assignor badge, b's row "1 / 1"
// with a stuck badge.
func TestAssignmentsInChromium(t *testing.T) {
	wd := startBrowser(t)
	c, sessions := smallFleet(t)
	ctx := context.Background()
	epoch, held, err := shard.TryLock(ctx, c.Locks(), sessions["a"], shard.AssignorLock)
	if err != nil || !held {
		t.Fatalf("Campaign = %d, %v, %v", epoch, held, err)
	}
	err = c.Assignments().Assign(ctx, sessions["a"], epoch, map[string]*shard.Assignment{
		"a": {Shards: []shard.ID{"stream/shard-000", "stream/shard-001", "stream/shard-003"}, Memory: assignor.Memory{Since: time.Now()}.Encode()},
		"b": {Shards: []shard.ID{"stream/shard-002"}, Memory: assignor.Memory{Since: time.Now(), Stuck: true, StuckSession: sessions["b"]}.Encode()},
	})
	if err != nil {
		t.Fatal(err)
	}
	base := serve(t, dashboard.Options{Name: "assigned", Coordinator: c})
	wd.navigate(base + "/")

	deadline := time.Now().Add(10 * time.Second)
	for {
		var s pageState
		if err := wd.eval(readPage, &s); err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		why := ""
		switch {
		case s.Assignor != "a" || s.AssignorEpoch != fmt.Sprint(epoch) || s.AssignorRow != "a":
			why = fmt.Sprintf("assignor tile %q epoch %q, row marked %q; want a, epoch %d", s.Assignor, s.AssignorEpoch, s.AssignorRow, epoch)
		case s.OwnedAssigned["a"] != "2 / 3" || s.OwnedAssigned["b"] != "1 / 1":
			why = fmt.Sprintf("owned / assigned %v, want a 2 / 3 and b 1 / 1", s.OwnedAssigned)
		case s.StuckBadges != "b":
			why = fmt.Sprintf("stuck badges on %q, want b only", s.StuckBadges)
		}
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not show the assignment within 10s: %s", why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

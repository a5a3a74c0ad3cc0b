package dashboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/dashboard"
	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/internal/history"
	"github.com/shardlease/shardlease/shard"
)

// TestRecentMovesFromTheRecordedHistory: a dashboard opened after a crash
// shows it among the recent moves, read from P/history, though no owner's
// key tells of it any more.
func TestRecentMovesFromTheRecordedHistory(t *testing.T) {
	ctx := context.Background()
	c, sessions := smallFleet(t)
	epoch, ok, err := shard.TryLock(ctx, c.Locks(), sessions["a"], shard.AssignorLock)
	if err != nil || !ok {
		t.Fatalf("taking the assignor lock: %v, %v", ok, err)
	}
	at := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	var l history.Log
	l.Append([]history.Change{
		{At: at, Index: 3, Kind: history.Acquired, Shard: "stream/shard-003", Worker: "gone", Token: 3, Reason: "initial"},
		{At: at.Add(time.Minute), Index: 9, Kind: history.Expired, Shard: "stream/shard-003", Worker: "gone", Token: 3,
			Reason: "gone's session ended without releasing it"},
	})
	value, err := l.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.History().Record(ctx, sessions["a"], epoch, value); err != nil {
		t.Fatal(err)
	}

	base := serve(t, dashboard.Options{Name: "orders", Coordinator: c})
	f := fleetJSON(t, base, func(f fleetview.Fleet) bool { return f.Config != nil })
	if len(f.Events) < 2 || f.Events[0].Kind != fleetview.Expired || f.Events[0].Worker != "gone" || !f.Events[0].At.Equal(at.Add(time.Minute)) ||
		f.Events[1].Kind != fleetview.Acquired || f.Events[1].Token != 3 {
		t.Fatalf("recent moves = %+v, want gone's expiry, then its acquisition, from P/history", f.Events)
	}
}

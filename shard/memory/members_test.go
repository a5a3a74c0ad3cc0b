package memory_test

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

func TestJoin(t *testing.T) {
	ctx := t.Context()
	c := memory.New()
	a := newSession(t, c, "w1", time.Hour, 0)
	b := newSession(t, c, "w1", time.Hour, 0)
	gone := newSession(t, c, "w9", time.Hour, 0)
	if err := c.Sessions().Destroy(ctx, gone); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name        string
		sid         shard.SessionID
		m           shard.Member
		wantErr     error
		wantMsg     string
		wantSession shard.SessionID // holder of the key afterwards
		wantWeight  int
	}{
		{"join", a, shard.Member{ID: "w1", Weight: 1}, nil, "", a, 1},
		{"same session updates", a, shard.Member{ID: "w1", Weight: 3, Draining: true}, nil, "", a, 3},
		{"other live session", b, shard.Member{ID: "w1", Weight: 5}, shard.ErrMemberExists, `"w1"`, a, 3},
		{"empty id", a, shard.Member{}, shard.ErrInvalidArgument, "empty", a, 3},
		{"gone session", gone, shard.Member{ID: "w1"}, shard.ErrSessionInvalid, string(gone), a, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, c).Index
			err := c.Members().Join(ctx, tt.sid, tt.m)
			if !errors.Is(err, tt.wantErr) || (err != nil && !strings.Contains(err.Error(), tt.wantMsg)) {
				t.Fatalf("Join = %v, want %v naming %s", err, tt.wantErr, tt.wantMsg)
			}
			snap := snapshot(t, c)
			m, _ := snap.Member("w1")
			if m.Session != tt.wantSession || m.Weight != tt.wantWeight {
				t.Fatalf("member = %+v, want session %s weight %d", m, tt.wantSession, tt.wantWeight)
			}
			if wantWrites := map[bool]uint64{true: 1, false: 0}[err == nil]; snap.Index-before != wantWrites {
				t.Fatalf("%d writes, want %d", snap.Index-before, wantWrites)
			}
		})
	}

	// Once a's session is gone the key is dead, and b may take it over.
	if err := c.Sessions().Destroy(ctx, a); err != nil {
		t.Fatal(err)
	}
	if m, _ := snapshot(t, c).Member("w1"); m.Live() || m.Weight != 3 {
		t.Fatalf("member after destroy = %+v, want dead with its value", m)
	}
	if err := c.Members().Join(ctx, b, shard.Member{ID: "w1", Weight: 5}); err != nil {
		t.Fatalf("Join over a dead member: %v", err)
	}
	if m, _ := snapshot(t, c).Member("w1"); m.Session != b || m.Weight != 5 || m.Draining {
		t.Fatalf("member after takeover = %+v", m)
	}
}

// TestDeadMemberGC: a dead member key stays visible for the grace period and
// is then deleted on its own; a member that joins again in time is kept.
func TestDeadMemberGC(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		const grace = 30 * time.Second
		c := memory.New(memory.WithMemberGrace(grace))
		dies := newSession(t, c, "dies", time.Hour, 0)
		returns := newSession(t, c, "returns", time.Hour, 0)
		for sid, id := range map[shard.SessionID]string{dies: "dies", returns: "returns"} {
			if err := c.Members().Join(ctx, sid, shard.Member{ID: id}); err != nil {
				t.Fatal(err)
			}
		}
		for _, sid := range []shard.SessionID{dies, returns} {
			if err := c.Sessions().Destroy(ctx, sid); err != nil {
				t.Fatal(err)
			}
		}
		ended := time.Now()

		time.Sleep(grace / 2)
		back := newSession(t, c, "returns", time.Hour, 0)
		if err := c.Members().Join(ctx, back, shard.Member{ID: "returns"}); err != nil {
			t.Fatal(err)
		}
		snap := snapshot(t, c)
		if m, ok := snap.Member("dies"); !ok || m.Live() {
			t.Fatalf("dead member inside grace = %+v, %v; want present and dead", m, ok)
		}

		// Nobody calls the coordinator: the watcher sees the deletion.
		res := <-watchAsync(ctx, c, snap.Index)
		if res.err != nil {
			t.Fatal(res.err)
		}
		if got := res.at.Sub(ended); got != grace {
			t.Fatalf("dead member deleted after %v, want %v", got, grace)
		}
		if _, ok := res.snap.Member("dies"); ok {
			t.Fatal("dead member still present after grace")
		}
		if m, ok := res.snap.Member("returns"); !ok || m.Session != back {
			t.Fatalf("rejoined member = %+v, %v; want kept with its new session", m, ok)
		}

		time.Sleep(time.Hour - grace) // the rejoined member's old deletion never comes
		if m, ok := snapshot(t, c).Member("returns"); !ok || !m.Live() {
			t.Fatalf("rejoined member = %+v, %v; want live", m, ok)
		}
		if err := c.Sessions().Destroy(ctx, back); err != nil {
			t.Fatal(err)
		}
	})
}

func TestConfigure(t *testing.T) {
	ctx := t.Context()
	c := memory.New()
	stored, err := c.Fleet().Configure(ctx, shard.Config{Shards: 128})
	if err != nil {
		t.Fatal(err)
	}
	want := shard.Config{Shards: 128, Name: shard.DefaultName, Protocol: shard.Protocol}
	if !stored.Same(want) {
		t.Fatalf("stored %+v, want normalized %+v", stored, want)
	}
	idx := snapshot(t, c).Index

	tests := []struct {
		name    string
		cfg     shard.Config
		wantErr error
		wantMsg []string
		want    shard.Config
	}{
		{"same", shard.Config{Shards: 128, Name: shard.DefaultName}, nil, nil, want},
		{"same, defaults left out", shard.Config{Shards: 128}, nil, nil, want},
		{"same, protocol named", shard.Config{Shards: 128, Protocol: shard.Protocol}, nil, nil, want},
		{"other protocol", shard.Config{Shards: 128, Protocol: 1}, shard.ErrConfigMismatch, []string{"protocol 3", "protocol 1", "no mixed fleets"}, want},
		{"other count", shard.Config{Shards: 64}, shard.ErrConfigMismatch, []string{"128", "64"}, want},
		{"other name", shard.Config{Shards: 128, Name: "orders"}, shard.ErrConfigMismatch, []string{`"stream/shard"`, `"orders"`}, want},
		{"invalid", shard.Config{Shards: 0}, shard.ErrInvalidConfig, []string{"0"}, shard.Config{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Fleet().Configure(ctx, tt.cfg)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not name %s", err, m)
				}
			}
			if !got.Same(tt.want) {
				t.Errorf("returned %+v, want %+v", got, tt.want)
			}
			if now := snapshot(t, c).Index; now != idx {
				t.Errorf("index moved %d -> %d", idx, now)
			}
		})
	}
}

// TestDeadMemberKeptUntilRejoinUntil: a dead member key whose worker said
// it will be back by RejoinUntil, later than the member grace, is deleted
// at RejoinUntil, not at the grace, so the assignor still sees it.
func TestDeadMemberKeptUntilRejoinUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		const grace, rejoin = 5 * time.Second, 20 * time.Second
		c := memory.New(memory.WithMemberGrace(grace))
		sid := newSession(t, c, "back", time.Hour, 0)
		until := time.Now().Add(rejoin)
		if err := c.Members().Join(ctx, sid, shard.Member{ID: "back", RejoinUntil: until}); err != nil {
			t.Fatal(err)
		}
		if err := c.Sessions().Destroy(ctx, sid); err != nil {
			t.Fatal(err)
		}
		snap := snapshot(t, c)
		res := <-watchAsync(ctx, c, snap.Index)
		if res.err != nil {
			t.Fatal(res.err)
		}
		if !res.at.Equal(until) {
			t.Fatalf("returning member deleted at %v, want at its RejoinUntil %v (grace %v)", res.at, until, grace)
		}
		if _, ok := res.snap.Member("back"); ok {
			t.Fatal("returning member still present after its RejoinUntil")
		}
	})
}

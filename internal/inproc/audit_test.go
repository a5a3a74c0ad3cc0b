package inproc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/offsets"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
)

const s1 = shard.ID("stream/shard-001")

// scripted is a store that answers what it is told: err for every call
// (nil accepts), whatever the token.
type scripted struct {
	err error
	cp  offsets.Checkpoint
}

func (s *scripted) Fence(context.Context, shard.ID, shard.Token) error { return s.err }
func (s *scripted) Commit(_ context.Context, _ shard.ID, t shard.Token, o int64) error {
	if s.err == nil {
		s.cp = offsets.Checkpoint{Offset: o, Token: t, Floor: max(s.cp.Floor, t)}
	}
	return s.err
}
func (s *scripted) Load(context.Context, shard.ID) (offsets.Checkpoint, error) { return s.cp, nil }
func (s *scripted) Close() error                                               { return nil }

// TestAuditorCountsEveryBrokenRule drives the auditor with a store that
// accepts or refuses whatever it is told, and checks that each broken rule
// is counted once and reported in words that name it, and that a correct
// store's answers count nothing.
func TestAuditorCountsEveryBrokenRule(t *testing.T) {
	ctx := context.Background()
	stale := fmt.Errorf("%w: floor is higher", offsets.ErrStaleToken)
	for _, tc := range []struct {
		name string
		play func(a *Auditor, st *scripted)
		want AuditCounts
		says string
	}{
		{"a correct sequence", func(a *Auditor, st *scripted) {
			_ = a.Fence(ctx, s1, 3)
			_ = a.Commit(ctx, s1, 3, 10)
			_ = a.Fence(ctx, s1, 7)
			a.Started(shard.Claim{Shard: s1, Token: 7}, offsets.Checkpoint{Offset: 10, Token: 3, Floor: 7})
			st.err = stale
			_ = a.Commit(ctx, s1, 3, 11)
		}, AuditCounts{Commits: 1, StaleRejected: 1, Fences: 2}, ""},
		{"a stale commit accepted", func(a *Auditor, _ *scripted) {
			_ = a.Fence(ctx, s1, 7)
			_ = a.Commit(ctx, s1, 3, 11)
		}, AuditCounts{Commits: 1, Fences: 1, StaleAccepted: 1}, "stale commit accepted: stream/shard-001@3"},
		{"an offset going back", func(a *Auditor, _ *scripted) {
			_ = a.Commit(ctx, s1, 3, 11)
			_ = a.Commit(ctx, s1, 3, 9)
		}, AuditCounts{Commits: 2, Regressions: 1}, "offset went backwards: stream/shard-001@3 committed 9"},
		{"an owner started below an older owner's commit", func(a *Auditor, _ *scripted) {
			_ = a.Commit(ctx, s1, 3, 11)
			a.Started(shard.Claim{Shard: s1, Token: 7}, offsets.Checkpoint{Offset: 4})
		}, AuditCounts{Commits: 1, LostCommits: 1}, "lost commit"},
		{"an older owner started below a newer owner's commit: no loss", func(a *Auditor, _ *scripted) {
			_ = a.Commit(ctx, s1, 9, 11)
			a.Started(shard.Claim{Shard: s1, Token: 7}, offsets.Checkpoint{Offset: 4})
		}, AuditCounts{Commits: 1}, ""},
		{"a valid commit refused", func(a *Auditor, st *scripted) {
			_ = a.Fence(ctx, s1, 3)
			st.err = stale
			_ = a.Commit(ctx, s1, 3, 1)
		}, AuditCounts{Fences: 1, StaleRejected: 1, FalseRejections: 1}, "refused as stale, but the floor is only 3"},
		{"a fence accepted below the floor", func(a *Auditor, _ *scripted) {
			_ = a.Fence(ctx, s1, 7)
			_ = a.Fence(ctx, s1, 3)
		}, AuditCounts{Fences: 2, FenceBelowFloor: 1}, "fence stream/shard-001@3 accepted below the floor 7"},
		{"a valid fence refused", func(a *Auditor, st *scripted) {
			st.err = stale
			_ = a.Fence(ctx, s1, 3)
		}, AuditCounts{FenceRefused: 1}, "fence stream/shard-001@3 refused as stale"},
		{"a commit failing otherwise", func(a *Auditor, st *scripted) {
			st.err = errors.New("disk full")
			_ = a.Commit(ctx, s1, 3, 1)
		}, AuditCounts{Unexpected: 1}, "unexpected error disk full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var said []string
			st := &scripted{}
			a := NewAuditor(st, AuditOptions{Violation: func(m string) { said = append(said, m) }})
			tc.play(a, st)
			if got := a.Counts(); got != tc.want {
				t.Errorf("counts %+v, want %+v", got, tc.want)
			}
			switch {
			case tc.says == "" && len(said) > 0:
				t.Errorf("reported %q, want nothing", said)
			case tc.says != "" && (len(said) != 1 || !strings.Contains(said[0], tc.says)):
				t.Errorf("reported %q, want one report saying %q", said, tc.says)
			}
		})
	}
}

// TestAuditorHistory: with History on, every fence and commit that reached
// the store is kept in order with positions in one sequence, and a call
// whose context had ended (it changed nothing) is left out; off, nothing is
// kept. Effect hears of every commit before the store does.
func TestAuditorHistory(t *testing.T) {
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel()
	var order []string
	store := logged{Store: offmem.New(), log: &order}
	a := NewAuditor(store, AuditOptions{History: true, Effect: func(c shard.Claim) {
		order = append(order, "effect")
	}})
	_ = a.Fence(ctx, s1, 3)
	_ = a.Commit(ctx, s1, 3, 10)
	_ = a.Commit(done, s1, 3, 12) // ended: not in the history
	_ = a.Fence(ctx, s1, 7)
	_ = a.Commit(ctx, s1, 3, 11) // stale: in the history, refused
	h := a.History()
	want := []string{"fence 3 <nil>", "commit 3 10 <nil>", "fence 7 <nil>", "commit 3 11 stale"}
	if len(h) != len(want) {
		t.Fatalf("history %v, want %d operations", h, len(want))
	}
	for i, op := range h {
		got := fmt.Sprintf("commit %d %d %v", op.Token, op.Offset, op.Err)
		if op.Fence {
			got = fmt.Sprintf("fence %d %v", op.Token, op.Err)
		}
		if !strings.HasPrefix(got, strings.TrimSuffix(want[i], "stale")) || (strings.HasSuffix(want[i], "stale") != errors.Is(op.Err, offsets.ErrStaleToken)) {
			t.Errorf("op %d: %s, want %s", i, got, want[i])
		}
		if op.End <= op.Start || i > 0 && op.Start <= h[i-1].End {
			t.Errorf("op %d at [%d,%d] after [%d,%d]: positions out of order", i, op.Start, op.End, h[max(i-1, 0)].Start, h[max(i-1, 0)].End)
		}
	}
	if got := strings.Join(order, " "); got != "effect store effect store effect store" {
		t.Errorf("effects and commits reached the store in the order %q, want each effect before its commit", got)
	}
	off := NewAuditor(offmem.New(), AuditOptions{})
	_ = off.Commit(ctx, s1, 3, 10)
	if h := off.History(); h != nil {
		t.Errorf("history kept without History: %v", h)
	}
}

// logged notes each commit that reaches the store.
type logged struct {
	offsets.Store
	log *[]string
}

func (l logged) Commit(ctx context.Context, s shard.ID, t shard.Token, o int64) error {
	*l.log = append(*l.log, "store")
	return l.Store.Commit(ctx, s, t, o)
}

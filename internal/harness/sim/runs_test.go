package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// TestRunLogCatchesTwoHandlersAtOnce: the handler-run check must see what
// it exists to see, and nothing else. Each case plays a hand-made history
// of one shard — an older owner w0 with token 3, a newer one w1 with token
// 7 — and lists the violations it must report (none: it must pass).
func TestRunLogCatchesTwoHandlersAtOnce(t *testing.T) {
	const s = shard.ID("stream/shard-000")
	old, next := shard.Claim{Shard: s, Token: 3}, shard.Claim{Shard: s, Token: 7}
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	tests := []struct {
		name    string
		play    func(l *runLog)
		want    []string // substrings, one per violation
		excused int64
	}{
		{
			name: "the new owner starts while the old handler still runs",
			play: func(l *runLog) {
				a := l.begin("w0", 1, old, 0)
				b := l.begin("w1", 2, next, sec(4))
				l.end(a, sec(5))
				l.end(b, sec(9))
			},
			want: []string{"two handlers ran at once from t=4s to t=5s: w0's handler for stream/shard-000@3: ran [0s, 5s); w1's handler for stream/shard-000@7: ran [4s, 5s) so far"},
		},
		{
			name: "the old handler returns at the instant the new one starts",
			play: func(l *runLog) {
				a := l.begin("w0", 1, old, 0)
				l.end(a, sec(4))
				l.end(l.begin("w1", 2, next, sec(4)), sec(9))
			},
		},
		{
			name: "the old handler is frozen by a pause across the new owner's run, and returns on waking",
			play: func(l *runLog) {
				a := l.begin("w0", 1, old, 0)
				l.halt(a, sec(1))
				l.end(l.begin("w1", 2, next, sec(3)), sec(6))
				l.resume(a, sec(8))
				l.end(a, sec(8))
			},
		},
		{
			name: "the old handler wakes while the new one runs and returns at once",
			play: func(l *runLog) {
				a := l.begin("w0", 1, old, 0)
				l.halt(a, sec(1))
				b := l.begin("w1", 2, next, sec(3))
				l.resume(a, sec(5))
				l.end(a, sec(5))
				l.end(b, sec(9))
			},
		},
		{
			name: "the old handler wakes while the new one runs and goes on running",
			play: func(l *runLog) {
				a := l.begin("w0", 1, old, 0)
				l.halt(a, sec(1))
				b := l.begin("w1", 2, next, sec(3))
				l.resume(a, sec(5))
				l.end(a, sec(5.5))
				l.end(b, sec(9))
			},
			want: []string{"from t=5s to t=5.5s: w0's handler for stream/shard-000@3: ran [0s, 1s) [5s, 5.5s); w1's handler for stream/shard-000@7: ran [3s, 5.5s) so far"},
		},
		{
			name: "the old handler wakes and commits after the new owner started",
			play: func(l *runLog) {
				a := l.begin("w0", 1, old, 0)
				l.halt(a, sec(1))
				b := l.begin("w1", 2, next, sec(3))
				l.resume(a, sec(5))
				l.effect(old, sec(5))
				l.end(a, sec(5))
				l.end(b, sec(9))
			},
			want: []string{"w0's handler for stream/shard-000@3 committed at t=5s, after the start of w1's handler for stream/shard-000@7 at t=3s"},
		},
		{
			name: "the old handler's last commit and the new owner's start share an instant, in that order",
			play: func(l *runLog) {
				a := l.begin("w0", 1, old, 0)
				l.effect(old, sec(4))
				l.end(a, sec(4))
				l.end(l.begin("w1", 2, next, sec(4)), sec(9))
			},
		},
		{
			name: "the old worker crashes; its goroutine winds down later",
			play: func(l *runLog) {
				a := l.begin("w0", 1, old, 0)
				l.crash(1, sec(1))
				l.resume(a, sec(2)) // a crashed process does not wake up
				b := l.begin("w1", 2, next, sec(3))
				l.end(a, sec(10))
				l.end(b, sec(12))
			},
		},
		{
			name: "a crash of another process of the same worker ID changes nothing",
			play: func(l *runLog) {
				a := l.begin("w0", 1, old, 0)
				l.crash(3, sec(1))
				b := l.begin("w1", 2, next, sec(3))
				l.end(a, sec(10))
				l.end(b, sec(12))
			},
			want: []string{"from t=3s to t=10s"},
		},
		{
			name: "the same claim's handler restarted is no overlap",
			play: func(l *runLog) {
				a := l.begin("w0", 1, old, 0)
				b := l.begin("w0", 1, old, sec(1))
				l.end(a, sec(2))
				l.end(b, sec(3))
			},
		},
		{
			name: "the new owner still runs when the run ends",
			play: func(l *runLog) {
				l.begin("w1", 2, next, sec(4))
				l.end(l.begin("w0", 1, old, 0), sec(3))
				l.final(sec(20))
			},
		},
		{
			name: "an old handler that never returns",
			play: func(l *runLog) {
				l.begin("w0", 1, old, 0)
				l.end(l.begin("w1", 2, next, sec(4)), sec(6))
				l.final(sec(20))
			},
			want: []string{"from t=4s to t=6s"},
		},
		{
			name: "a clock jump excuses an overlap, which is counted",
			play: func(l *runLog) {
				l.excuse = func(c shard.Claim, at time.Duration) bool { return c == old && at == sec(4) }
				a := l.begin("w0", 1, old, 0)
				b := l.begin("w1", 2, next, sec(4))
				l.end(a, sec(5))
				l.end(b, sec(9))
			},
			excused: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &checker{start: time.Now()}
			l := newRunLog(c, nil, nil)
			tt.play(l)
			got := c.list()
			if len(got) != len(tt.want) {
				t.Fatalf("%d violations, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("violation %d is\n  %s\nwant it to contain\n  %s", i, got[i], w)
				}
			}
			if n := l.overlapsExcused(); n != tt.excused {
				t.Errorf("%d overlaps excused, want %d", n, tt.excused)
			}
		})
	}
}

// TestRunLogCatchesLateCommitsAndEarlyReleases: the parts of the check that
// need the mirrored leases — a commit at or past the claim's local
// deadline, and a release under a running handler.
func TestRunLogCatchesLateCommitsAndEarlyReleases(t *testing.T) {
	c := &checker{start: time.Now()}
	ls := newLeases(shard.LeasePolicy{TTL: 3 * time.Second, RenewEvery: time.Second, PauseBudget: time.Second})
	cl := shard.Claim{Shard: "stream/shard-001", Token: 5}
	ls.sessions["session-1"] = &leaseRec{worker: "w0", deadline: c.start.Add(2 * time.Second)}
	ls.claims[cl] = "session-1"
	l := newRunLog(c, ls, nil)

	r := l.begin("w0", 1, cl, 0)
	l.effect(cl, 1999*time.Millisecond) // within the deadline: fine
	l.released("session-2", []shard.ID{cl.Shard}, time.Second)
	if got := c.list(); len(got) != 0 {
		t.Fatalf("violations before anything went wrong:\n%s", strings.Join(got, "\n"))
	}
	l.effect(cl, 2*time.Second)
	l.released("session-1", []shard.ID{cl.Shard}, 2*time.Second)
	l.end(r, 3*time.Second)
	l.released("session-1", []shard.ID{cl.Shard}, 3*time.Second) // after the return: fine
	got := c.list()
	want := []string{
		"w0's handler for stream/shard-001@5 committed at t=2s, 0s past its local deadline (session session-1)",
		"w0 released it at t=2s while w0's handler for stream/shard-001@5, started at t=0s, had not returned",
	}
	if len(got) != len(want) {
		t.Fatalf("%d violations, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("violation %d is\n  %s\nwant it to contain\n  %s", i, got[i], w)
		}
	}
}

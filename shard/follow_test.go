package shard_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// flaky fails its first fails listings, then answers with index 1, 1, 2,
// 3, … (a repeated index is a blocking query that timed out).
type flaky struct {
	fails, calls int
}

func (f *flaky) Watch(ctx context.Context, _ uint64) (shard.Snapshot, error) {
	f.calls++
	if f.calls <= f.fails {
		return shard.Snapshot{}, errors.New("agent down")
	}
	return shard.Snapshot{Index: uint64(max(1, f.calls-f.fails-1))}, nil
}

// TestFollow: failed listings are retried with growing, bounded waits;
// an unchanged index is not delivered; ErrStopFollowing ends Follow with
// nil; another error from fn is returned as it is.
func TestFollow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &flaky{fails: 6}
		start := time.Now()
		var got []uint64
		err := shard.Follow(t.Context(), c.Watch, shard.FollowOptions{}, func(s shard.Snapshot) (time.Time, error) {
			got = append(got, s.Index)
			if len(got) == 3 {
				return time.Time{}, shard.ErrStopFollowing
			}
			return time.Time{}, nil
		})
		if err != nil {
			t.Fatalf("Follow = %v, want nil after ErrStopFollowing", err)
		}
		if want := []uint64{1, 2, 3}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("delivered indexes %v, want %v (the repeated 1 is a timeout)", got, want)
		}
		// Six failures wait at least 25+50+100+200+400+800 ms and at most
		// twice that.
		if waited := time.Since(start); waited < 1575*time.Millisecond || waited > 3150*time.Millisecond {
			t.Errorf("six failed listings waited %v in all", waited)
		}

		boom := errors.New("boom")
		if err := shard.Follow(t.Context(), (&flaky{}).Watch, shard.FollowOptions{}, func(shard.Snapshot) (time.Time, error) { return time.Time{}, boom }); err != boom {
			t.Errorf("fn's error came back as %v", err)
		}
		stop := 0
		err = shard.Follow(t.Context(), (&flaky{fails: 100}).Watch, shard.FollowOptions{OnError: func(error) bool { stop++; return stop < 2 }},
			func(shard.Snapshot) (time.Time, error) { return time.Time{}, nil })
		if err == nil || stop != 2 {
			t.Errorf("OnError refusing the second failure: Follow = %v after %d failures", err, stop)
		}
	})
}

// still answers index 1 at once, then blocks until its context ends: a
// key that never changes.
type still struct{ calls int }

func (s *still) Watch(ctx context.Context, after uint64) (shard.Snapshot, error) {
	s.calls++
	if after == 0 {
		return shard.Snapshot{Index: 1}, nil
	}
	<-ctx.Done()
	return shard.Snapshot{}, ctx.Err()
}

// TestFollowAgain: a time fn returns calls it again with the last answer
// when nothing changed by then; ErrFollowAgain reads again from index 0
// after a backoff.
func TestFollowAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		err := shard.Follow(t.Context(), (&still{}).Watch, shard.FollowOptions{}, func(s shard.Snapshot) (time.Time, error) {
			at = append(at, time.Since(start))
			if len(at) == 3 {
				return time.Time{}, shard.ErrStopFollowing
			}
			return time.Now().Add(time.Second), nil
		})
		if err != nil || len(at) != 3 || at[0] != 0 || at[1] != time.Second || at[2] != 2*time.Second {
			t.Fatalf("Follow = %v, fn called at %v, want at 0s, 1s, 2s", err, at)
		}

		w := &still{}
		calls := 0
		err = shard.Follow(t.Context(), w.Watch, shard.FollowOptions{}, func(s shard.Snapshot) (time.Time, error) {
			calls++
			if calls == 3 {
				return time.Time{}, shard.ErrStopFollowing
			}
			return time.Time{}, shard.ErrFollowAgain
		})
		if err != nil || calls != 3 || w.calls != 3 {
			t.Fatalf("Follow = %v after %d calls of fn and %d reads, want 3 and 3: each ErrFollowAgain reads from index 0 again", err, calls, w.calls)
		}
	})
}

// known is at index 5 until 2 s have passed, then at 6; a blocking query
// on index 5 times out after a second with index 5 unchanged.
type known struct {
	start time.Time
	reads []uint64
}

func (k *known) Watch(ctx context.Context, after uint64) (shard.Snapshot, error) {
	k.reads = append(k.reads, after)
	if after == 5 {
		select {
		case <-ctx.Done():
			return shard.Snapshot{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	index := uint64(5)
	if time.Since(k.start) >= 2*time.Second {
		index = 6
	}
	return shard.Snapshot{Index: index}, nil
}

// TestFollowAfter: with After, the first read waits past that index and
// fn is first called on a change, never with the answer the caller
// already has, even when a blocking query times out with it unchanged.
func TestFollowAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &known{start: time.Now()}
		var got []uint64
		err := shard.Follow(t.Context(), k.Watch, shard.FollowOptions{After: 5}, func(s shard.Snapshot) (time.Time, error) {
			got = append(got, s.Index)
			return time.Time{}, shard.ErrStopFollowing
		})
		if err != nil || len(got) != 1 || got[0] != 6 || time.Since(k.start) != 2*time.Second {
			t.Fatalf("Follow = %v, fn got %v at %v, want index 6 alone at 2s", err, got, time.Since(k.start))
		}
		if len(k.reads) != 2 || k.reads[0] != 5 || k.reads[1] != 5 {
			t.Errorf("reads after %v, want [5 5]: the first waits on the known index, as does the one after its timeout", k.reads)
		}
	})
}

// TestFollowKeepsAnAnswerThatCameAtItsWake: a read that succeeds with a
// new index just as fn's wake time passes delivers the new answer, not
// the one before it again.
func TestFollowKeepsAnAnswerThatCameAtItsWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		watch := func(ctx context.Context, _ uint64) (shard.Snapshot, error) {
			calls++
			if calls == 1 {
				return shard.Snapshot{Index: 1}, nil
			}
			<-ctx.Done() // the change lands as the deadline passes
			return shard.Snapshot{Index: 2}, nil
		}
		var got []uint64
		_ = shard.Follow(t.Context(), watch, shard.FollowOptions{}, func(s shard.Snapshot) (time.Time, error) {
			got = append(got, s.Index)
			if len(got) == 2 {
				return time.Time{}, shard.ErrStopFollowing
			}
			return time.Now().Add(100 * time.Millisecond), nil
		})
		if len(got) != 2 || got[1] != 2 {
			t.Errorf("delivered %v, want 1 then the answer that came at the wake, 2", got)
		}
	})
}

package assignor

import (
	"errors"
	"testing"
	"time"

	"github.com/shardlease/shardlease/rebalance"
)

// TestGatherQuietIsCheckedOnAFreshRead: a listing that stopped changing
// ends the gathering only if a read as new as the call shows the same
// members; one that shows more restarts the quiet; a failed read, or the
// limit, ends it anyway.
func TestGatherQuietIsCheckedOnAFreshRead(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) rebalance.State {
		return rebalance.State{Now: t0.Add(d), Members: []rebalance.Member{{ID: "a"}, {ID: "b"}}}
	}
	const limit = 10 * time.Second
	var g gathering
	reads := 0
	fresh := func(ids ...string) func(time.Time) ([]string, error) {
		return func(deadline time.Time) ([]string, error) {
			reads++
			if !deadline.Equal(t0.Add(limit)) {
				t.Errorf("fresh read's deadline %v, want the gathering's limit %v", deadline, t0.Add(limit))
			}
			return ids, nil
		}
	}
	if until := g.wait(at(0), limit, fresh("a", "b", "c")); !until.Equal(t0.Add(gatherQuiet)) || reads != 0 {
		t.Fatalf("first look: wait until %v after %d fresh reads, want %v and none", until, reads, t0.Add(gatherQuiet))
	}
	// Quiet on the listing, but a fresh read shows c: the quiet restarts.
	if until := g.wait(at(gatherQuiet), limit, fresh("a", "b", "c")); !until.Equal(t0.Add(2*gatherQuiet)) || reads != 1 {
		t.Fatalf("quiet with a member unseen: wait until %v after %d reads, want %v after 1", until, reads, t0.Add(2*gatherQuiet))
	}
	// The listing catches up with c, and stays so: placed once a fresh read agrees.
	late := at(2 * gatherQuiet)
	late.Members = append(late.Members, rebalance.Member{ID: "c"})
	if until := g.wait(late, limit, fresh("a", "b", "c")); !until.IsZero() || reads != 2 {
		t.Fatalf("quiet confirmed: wait until %v after %d reads, want now after 2", until, reads)
	}

	// A failed read does not hold the placement back.
	var h gathering
	h.wait(at(0), limit, nil)
	if until := h.wait(at(gatherQuiet), limit, func(time.Time) ([]string, error) { return nil, errors.New("unavailable") }); !until.IsZero() {
		t.Fatalf("a failed fresh read: wait until %v, want now", until)
	}

	// At the limit no read is made: members that keep coming do not hold it back.
	var k gathering
	k.wait(at(0), time.Second, nil)
	reads = 0
	if until := k.wait(at(time.Second), time.Second, fresh("a", "b", "z")); !until.IsZero() || reads != 0 {
		t.Fatalf("at the limit: wait until %v after %d reads, want now after none", until, reads)
	}
}

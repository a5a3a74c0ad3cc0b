package coordtest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/shardlease/shardlease/shard"
)

// history: P/history is missing in a new fleet; Record writes it only for
// the session that holds P/assignor at exactly the epoch given, so a
// deposed assignor cannot overwrite it; Read returns what was recorded,
// with an index that a later record raises; a value over
// shard.MaxHistoryBytes is refused; and the key is never in a snapshot:
// not among the problems, and its writes change no part of the view.
func (s *suite) history(t *testing.T) {
	c := s.open(t)
	ctx := t.Context()
	configure(t, c, 4)
	if v, idx, err := c.History().Read(ctx); err != nil || v != nil || idx != 0 {
		t.Fatalf("History().Read() on a new fleet = %q, %d, %v; want nil, 0, nil", v, idx, err)
	}
	a := session(t, c, "w-a", long, 0)
	b := session(t, c, "w-b", long, 0)
	e1 := campaignHeld(t, c, a, "w-a")

	idx := snapshot(t, c).Index
	for _, tt := range notTheAssignor(a, b, e1) {
		if err := c.History().Record(ctx, tt.sid, tt.epoch, []byte(`{"v":1}`)); !errors.Is(err, shard.ErrNotAssignor) {
			t.Fatalf("Record by %s = %v, want ErrNotAssignor", tt.name, err)
		}
	}
	huge := bytes.Repeat([]byte("x"), shard.MaxHistoryBytes+1)
	if err := c.History().Record(ctx, a, e1, huge); !errors.Is(err, shard.ErrInvalidArgument) {
		t.Fatalf("Record of %d bytes = %v, want ErrInvalidArgument", len(huge), err)
	}
	noWrite(t, c, idx, quiet, "refused Record calls")

	first := []byte(`{"v":1,"changes":["one"]}`)
	if err := c.History().Record(ctx, a, e1, first); err != nil {
		t.Fatalf("Record by the assignor: %v", err)
	}
	v, i1, err := c.History().Read(ctx)
	if err != nil || !bytes.Equal(v, first) || i1 <= idx {
		t.Fatalf("Read after Record = %q, %d, %v; want %q at an index above %d", v, i1, err, first, idx)
	}
	snap := snapshot(t, c)
	if len(snap.Problems) > 0 {
		t.Fatalf("P/history is reported as a problem: %q", snap.Problems)
	}
	if strings.Contains(describe(snap), "history") {
		t.Fatalf("P/history shows in the snapshot: %s", describe(snap))
	}

	// Deposed: b takes the role; a's record at its epoch is refused and
	// b's is written.
	resign(t, c, a)
	e2 := campaignHeld(t, c, b, "w-b")
	err = c.History().Record(ctx, a, e1, []byte(`{"v":1,"changes":["stale"]}`))
	if !errors.Is(err, shard.ErrNotAssignor) || !strings.Contains(err.Error(), string(a)) {
		t.Fatalf("Record by the deposed assignor = %v, want ErrNotAssignor naming its session", err)
	}
	second := []byte(`{"v":1,"changes":["one","two"]}`)
	if err := c.History().Record(ctx, b, e2, second); err != nil {
		t.Fatalf("Record by the new assignor: %v", err)
	}
	if v, i2, err := c.History().Read(ctx); err != nil || !bytes.Equal(v, second) || i2 <= i1 {
		t.Fatalf("Read after the second Record = %q, %d, %v; want %q at an index above %d", v, i2, err, second, i1)
	}
}

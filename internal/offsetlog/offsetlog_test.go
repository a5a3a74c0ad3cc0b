package offsetlog

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/memory"
)

// Every call is recorded with its outcome, and Read puts the two workers'
// files back together in start order.
func TestRecordAndRead(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	inner := memory.New()
	defer inner.Close()
	var paths []string
	stores := map[string]*Store{}
	for _, w := range []string{"a", "b"} {
		p := filepath.Join(dir, w+".jsonl")
		f, err := OpenFile(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		paths = append(paths, p)
		stores[w] = New(inner, f, w)
	}
	a, b := stores["a"], stores["b"]
	if err := a.Fence(ctx, "s", 5); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(ctx, "s", 5, 100); err != nil {
		t.Fatal(err)
	}
	if err := b.Fence(ctx, "s", 7); err != nil {
		t.Fatal(err)
	}
	if err := a.Commit(ctx, "s", 5, 110); !errors.Is(err, offsets.ErrStaleToken) {
		t.Fatalf("stale commit: %v", err)
	}
	if cp, err := b.Load(ctx, "s"); err != nil || cp.Offset != 100 {
		t.Fatalf("load = %+v, %v", cp, err)
	}
	if err := a.Commit(ctx, "", 5, 1); err == nil {
		t.Fatal("empty shard accepted")
	}
	ops, err := Read(paths...)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"fence ok a", "commit ok a", "fence ok b", "commit stale a", "load ok b", "commit error a"}
	if len(ops) != len(want) {
		t.Fatalf("%d ops, want %d: %v", len(ops), len(want), ops)
	}
	for i, o := range ops {
		if got := o.Kind + " " + o.Result + " " + o.Worker; got != want[i] {
			t.Errorf("op %d = %q, want %q (%v)", i, got, want[i], o)
		}
		if o.End < o.Start || (i > 0 && o.Start < ops[i-1].End) {
			t.Errorf("op %d: times [%d, %d] out of order", i, o.Start, o.End)
		}
		if !strings.HasPrefix(o.Process(), o.Worker+"/") {
			t.Errorf("op %d: process %q", i, o.Process())
		}
	}
	if ops[4].CP.Offset != 100 || ops[4].CP.Floor != 7 {
		t.Errorf("load's checkpoint = %+v", ops[4].CP)
	}
}

// A call line with no return (the process was killed) reads as unknown and
// never ended; a truncated last line is ignored; a bad line elsewhere is an
// error.
func TestReadKilledWriter(t *testing.T) {
	p := filepath.Join(t.TempDir(), "w.jsonl")
	body := `{"id":"w/1/1","phase":"call","worker":"w","op":"commit","shard":"s","token":3,"offset":9,"at":10}` + "\n" +
		`{"id":"w/1/2","phase":"ca`
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ops, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || ops[0].Result != ResultUnknown || ops[0].End != math.MaxInt64 || ops[0].Offset != 9 {
		t.Fatalf("ops = %+v", ops)
	}
	if err := os.WriteFile(p, []byte("garbage\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("Read of a bad first line: %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// A call whose call line cannot be written never reaches the store.
func TestUnrecordedCallNotForwarded(t *testing.T) {
	inner := memory.New()
	defer inner.Close()
	s := New(inner, failWriter{}, "w")
	if err := s.Commit(context.Background(), "s", 1, 5); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Commit = %v", err)
	}
	if cp, _ := inner.Load(context.Background(), "s"); cp.Offset != 0 {
		t.Fatalf("the unrecorded commit reached the store: %+v", cp)
	}
}

// A handler's runs go to the same file as the store's calls and read back
// as intervals with their effects; a run whose process died has no end.
func TestRuns(t *testing.T) {
	p := filepath.Join(t.TempDir(), "w.jsonl")
	f, err := OpenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inner := memory.New()
	defer inner.Close()
	s := New(inner, f, "w")
	ctx := context.Background()
	if err := s.Fence(ctx, "s", 3); err != nil {
		t.Fatal(err)
	}
	r, err := s.StartRun("s", 3, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	checked := time.Now()
	if err := r.Effect(checked, 40); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, "s", 3, 40); err != nil {
		t.Fatal(err)
	}
	r.End()
	open, err := s.StartRun("t", 4, time.Now()) // never ended: the process "died"
	if err != nil {
		t.Fatal(err)
	}
	if err := open.Effect(time.Now(), 7); err != nil {
		t.Fatal(err)
	}

	ops, ivs, err := ReadAll(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 2 || ops[0].Kind != OpFence || ops[1].Kind != OpCommit {
		t.Fatalf("ops = %v", ops)
	}
	if len(ivs) != 2 {
		t.Fatalf("intervals = %+v, want 2", ivs)
	}
	done, died := ivs[0], ivs[1]
	if done.Shard != "s" || done.Token != 3 || done.Worker != "w" || done.Process() != ops[0].Process() {
		t.Errorf("first run %+v (process %q, want %q)", done, done.Process(), ops[0].Process())
	}
	if !(done.Start <= checked.UnixNano() && checked.UnixNano() <= ops[1].Start && ops[1].End <= done.End) {
		t.Errorf("run [%d, %d] does not hold its effect at %d and its commit [%d, %d]", done.Start, done.End, checked.UnixNano(), ops[1].Start, ops[1].End)
	}
	if len(done.Effects) != 1 || done.Effects[0] != (Effect{At: checked.UnixNano(), Offset: 40}) {
		t.Errorf("effects %+v", done.Effects)
	}
	if died.End != math.MaxInt64 || len(died.Effects) != 1 || died.Effects[0].Offset != 7 {
		t.Errorf("run without an end line: %+v", died)
	}
	if ops2, err := Read(p); err != nil || len(ops2) != 2 {
		t.Errorf("Read = %d ops, %v; want the 2 calls alone", len(ops2), err)
	}
}

// An effect or end line without its start is an error naming the line.
func TestRunLineWithoutStart(t *testing.T) {
	p := filepath.Join(t.TempDir(), "w.jsonl")
	body := `{"id":"w/1/9","phase":"effect","offset":5,"at":10}` + "\n" + `{"id":"w/1/10","phase":"call","op":"load","shard":"s","at":11}` + "\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadAll(p); err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "without its start") {
		t.Fatalf("ReadAll = %v, want an effect without its start at line 1", err)
	}
}

// Without a history (a nil Store) runs record nothing and never fail; a
// start or effect line that cannot be written fails, so that the handler
// neither runs nor acts unrecorded.
func TestRunRecordingFails(t *testing.T) {
	var none *Store
	r, err := none.StartRun("s", 1, time.Now())
	if r != nil || err != nil {
		t.Fatalf("StartRun on no history = %v, %v", r, err)
	}
	if err := r.Effect(time.Now(), 1); err != nil {
		t.Fatal(err)
	}
	r.End()

	inner := memory.New()
	defer inner.Close()
	s := New(inner, failWriter{}, "w")
	if _, err := s.StartRun("s", 1, time.Now()); err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "token 1") {
		t.Errorf("StartRun = %v", err)
	}
	r = &Run{s: s, id: "w/1/1", sh: "s", t: 1}
	if err := r.Effect(time.Now(), 9); err == nil || !strings.Contains(err.Error(), "offset 9") {
		t.Errorf("Effect = %v", err)
	}
}

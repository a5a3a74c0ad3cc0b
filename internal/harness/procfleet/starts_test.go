package procfleet

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"
)

// TestReadStartsFollowsAGrowingHistory: the process fleet learns when
// each shard's handler started from the workers' history files as they
// grow: only start lines count, a line cut in the middle waits for its
// end, and a shard's later start replaces its earlier one.
func TestReadStartsFollowsAGrowingHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w01.jsonl")
	var l StartLog
	off, rest := readStarts(path, 0, nil, &l) // not written yet
	if off != 0 || len(rest) != 0 {
		t.Fatalf("a missing file read as offset %d, rest %q", off, rest)
	}
	t0 := time.Unix(100, 0)
	write := func(s string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"id":"w01/1/1","phase":"call","worker":"w01","op":"fence","shard":"s/a","token":7,"at":100000000001}` + "\n" +
		`{"id":"w01/1/2","phase":"start","worker":"w01","shard":"s/a","token":7,"at":100000000002}` + "\n" +
		`{"id":"w01/1/3","phase":"start","worker":"w01","shard":"s/b","tok`)
	off, rest = readStarts(path, off, rest, &l)
	if at, ok := l.Last([]string{"s/a"}, t0); !ok || at.UnixNano() != 100000000002 {
		t.Errorf("s/a's start: %v, %v; want the start line's time", at, ok)
	}
	if _, ok := l.Last([]string{"s/b"}, t0); ok {
		t.Error("s/b counted from half a line")
	}
	write(`en":3,"at":100000000005}` + "\n" + `{"id":"w01/1/4","phase":"start","worker":"w01","shard":"s/a","token":9,"at":100000000009}` + "\n")
	off, rest = readStarts(path, off, rest, &l)
	if at, ok := l.Last([]string{"s/a", "s/b"}, t0); !ok || at.UnixNano() != 100000000009 {
		t.Errorf("the later of s/a and s/b: %v, %v; want s/a's second start", at, ok)
	}
	if fi, _ := os.Stat(path); off != fi.Size() || len(rest) != 0 {
		t.Errorf("offset %d of %d bytes, rest %q; want the whole file read", off, fi.Size(), rest)
	}
}

// TestStartLogLatestAndWait: LatestAfter is the latest start of any shard
// after t0; WaitStarted returns as soon as every named shard started after
// t0, and gives up after its window when one never does.
func TestStartLogLatestAndWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l StartLog
		t0 := time.Now()
		if _, ok := l.LatestAfter(t0); ok {
			t.Fatal("an empty log has a latest start")
		}
		l.RecordAt("a", t0.Add(-time.Second)) // before t0: not counted
		l.RecordAt("b", t0.Add(time.Second))
		l.RecordAt("c", t0.Add(2*time.Second))
		if at, ok := l.LatestAfter(t0); !ok || !at.Equal(t0.Add(2*time.Second)) {
			t.Fatalf("latest after t0: %v, %v; want c's start", at, ok)
		}
		go func() {
			time.Sleep(300 * time.Millisecond)
			l.RecordAt("a", time.Now())
		}()
		began := time.Now()
		if at, ok := l.WaitStarted(context.Background(), []string{"a", "b"}, t0, time.Second); !ok || !at.Equal(t0.Add(time.Second)) || time.Since(began) > 310*time.Millisecond {
			t.Fatalf("wait for a and b: %v, %v after %v; want b's start once a started, at 300 ms", at, ok, time.Since(began))
		}
		began = time.Now()
		if _, ok := l.WaitStarted(context.Background(), []string{"d"}, t0, time.Second); ok || time.Since(began) < time.Second {
			t.Fatalf("a shard that never starts: ok %v after %v, want false after 1s", ok, time.Since(began))
		}
	})
}

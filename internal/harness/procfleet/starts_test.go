package procfleet

import (
	"os"
	"path/filepath"
	"testing"
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

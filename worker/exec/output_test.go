package exec

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// TestLineWriterPrefixesWholeLines: every line, however it was split into
// writes, comes out whole and prefixed; a last line without a newline is
// written at flush; an endless line is cut at maxLine.
func TestLineWriterPrefixesWholeLines(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"one line", []string{"hello\n"}, "[s] hello\n"},
		{"split", []string{"hel", "lo\nwor", "ld\n"}, "[s] hello\n[s] world\n"},
		{"two in one", []string{"a\nb\n"}, "[s] a\n[s] b\n"},
		{"no newline at the end", []string{"a\npartial"}, "[s] a\n[s] partial\n"},
		{"empty lines", []string{"\n\n"}, "[s] \n[s] \n"},
		{"long, with its newline in one write", []string{strings.Repeat("x", maxLine+10) + "\n"},
			"[s] " + strings.Repeat("x", maxLine+10) + "\n"},
	} {
		var out bytes.Buffer
		l := &lineWriter{mu: &sync.Mutex{}, out: &out, prefix: "[s] "}
		for _, w := range tc.writes {
			if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("%s: Write = %d, %v", tc.name, n, err)
			}
		}
		l.flush()
		if out.String() != tc.want {
			t.Errorf("%s: wrote %q, want %q", tc.name, trim(out.String()), trim(tc.want))
		}
	}
}

// TestLineWriterCutsAnEndlessLine: output without newlines is written in
// pieces of maxLine, not kept in memory.
func TestLineWriterCutsAnEndlessLine(t *testing.T) {
	var out bytes.Buffer
	l := &lineWriter{mu: &sync.Mutex{}, out: &out, prefix: "[s] "}
	chunk := []byte(strings.Repeat("y", 1024))
	for range 2 * maxLine / len(chunk) {
		_, _ = l.Write(chunk)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || len(l.buf) != 0 {
		t.Fatalf("%d lines written, %d bytes held; want 2 lines of %d and nothing held", len(lines), len(l.buf), maxLine)
	}
	for _, line := range lines {
		if line != "[s] "+strings.Repeat("y", maxLine) {
			t.Errorf("a piece of %d bytes, want the prefix and %d", len(line), maxLine)
		}
	}
}

// TestLineWriterLinesOfManyChildrenNeverMix: lines written concurrently by
// several writers that share one mutex come out whole.
func TestLineWriterLinesOfManyChildrenNeverMix(t *testing.T) {
	var out bytes.Buffer
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range []string{"a", "b", "c", "d"} {
		wg.Go(func() {
			l := &lineWriter{mu: &mu, out: &out, prefix: "[" + p + "] "}
			for range 200 {
				_, _ = l.Write([]byte(p + p + p))
				_, _ = l.Write([]byte(p + "\n"))
			}
		})
	}
	wg.Wait()
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		p := line[1:2]
		if line != "["+p+"] "+strings.Repeat(p, 4) {
			t.Fatalf("a mixed or broken line: %q", line)
		}
	}
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:40] + "…" + s[len(s)-40:]
	}
	return s
}

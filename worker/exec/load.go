package exec

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// loadFD is the child's descriptor of its load pipe: the first of
// cmd.ExtraFiles, after standard input, output and error.
const loadFD = 3

// maxLoadLine caps a line read from a load pipe. A longer one is bad
// input; the rest of it, up to its newline, is read and dropped, so a
// child writing without newlines costs no memory and never blocks.
const maxLoadLine = 256

// maxQuoted caps the part of a bad line that is logged.
const maxQuoted = 100

// loadPipe is the pipe on which one child reports its shard's load.
type loadPipe struct {
	r, w *os.File
	done chan struct{} // closed when the reader has returned
}

// newLoadPipe makes the pipe and hands its write end to cmd as descriptor
// loadFD. Both ends are close-on-exec in this process (os.Pipe), so no
// other child inherits them: only cmd gets the write end, by ExtraFiles.
func newLoadPipe(cmd *osexec.Cmd) (*loadPipe, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating the load pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{w}
	return &loadPipe{r: r, w: w, done: make(chan struct{})}, nil
}

// close closes both ends, for a child that did not start.
func (p *loadPipe) close() {
	_ = p.w.Close()
	_ = p.r.Close()
}

// run, once the child has started, closes this process's copy of the
// write end, so the read end ends when the child and whatever it started
// close theirs, and reads the pipe in a goroutine until then or stop.
func (p *loadPipe) run(s *Supervisor, report func(float64), log *zap.Logger) {
	_ = p.w.Close()
	go func() {
		defer close(p.done)
		s.readLoads(p.r, report, log)
	}()
}

// stop closes the read end, which ends a read in progress, and waits for
// the reader: after stop nothing reports for the child. A grandchild that
// still holds the write end gets EPIPE.
func (p *loadPipe) stop() {
	_ = p.r.Close()
	<-p.done
}

// readLoads reads lines "load <number>" from r until it ends, passing
// each number to report. A line that is not one, with a finite number ≥ 0,
// is bad input: it is ignored and counted (BadLoadLines), and the first of
// each child's is logged, quoted and cut to maxQuoted bytes.
func (s *Supervisor) readLoads(r io.Reader, report func(float64), log *zap.Logger) {
	br := bufio.NewReaderSize(r, maxLoadLine)
	logged := false
	bad := func(line []byte) {
		s.badLoadLines.Add(1)
		if logged {
			return
		}
		logged = true
		log.Warn(`the child wrote a line to its load pipe that is not "load <finite number ≥ 0>"; ignoring it (logged once per child)`,
			zap.String("line", strconv.Quote(string(line[:min(len(line), maxQuoted)]))))
	}
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			bad(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				return
			}
			continue
		}
		if len(line) > 0 {
			if v, ok := parseLoad(string(line)); ok {
				report(v)
			} else {
				bad(line)
			}
		}
		if err != nil {
			return
		}
	}
}

// parseLoad returns the number of a line "load <number>" (spaces and tabs
// around the words and a trailing "\r\n" allowed), and whether the line is
// one with a finite number ≥ 0.
func parseLoad(line string) (float64, bool) {
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "load" {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[1], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, false
	}
	return v, true
}

// BadLoadLines returns how many lines the children have written to their
// load pipes that were not "load <finite number ≥ 0>", over the
// Supervisor's life.
func (s *Supervisor) BadLoadLines() int64 { return s.badLoadLines.Load() }

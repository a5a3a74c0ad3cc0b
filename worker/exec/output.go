package exec

import (
	"bytes"
	"io"
	"sync"
)

// maxLine caps a buffered output line; a longer one is cut into pieces.
const maxLine = 64 << 10

// lineWriter writes a child's output line by line, each line prefixed and
// written whole under mu, so lines of different children never mix.
type lineWriter struct {
	mu     *sync.Mutex
	out    io.Writer
	prefix string
	buf    []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i+1])
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) >= maxLine {
		l.emit(append(l.buf, '\n'))
		l.buf = nil
	}
	l.buf = append([]byte(nil), l.buf...) // do not pin the emitted lines
	return len(p), nil
}

// flush writes a last line that had no newline.
func (l *lineWriter) flush() {
	if len(l.buf) > 0 {
		l.emit(append(l.buf, '\n'))
		l.buf = nil
	}
}

func (l *lineWriter) emit(line []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.out.Write(append([]byte(l.prefix), line...))
}

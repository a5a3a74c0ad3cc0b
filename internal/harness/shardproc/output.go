package shardproc

import (
	"bytes"
	"sync"
)

// Output is a writer that child processes (or a supervisor of them) and a
// test share: writes from many goroutines are serialized, and String reads
// what was written so far. The zero value is ready.
type Output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

// String returns everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

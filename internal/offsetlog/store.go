package offsetlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Results of an operation.
const (
	ResultOK    = "ok"    // accepted (Fence, Commit) or answered (Load)
	ResultStale = "stale" // rejected with offsets.ErrStaleToken
	ResultError = "error" // any other error: the outcome is unknown
	// ResultUnknown is Read's result for a call without a return line: the
	// process died during it.
	ResultUnknown = "unknown"
)

// Operation kinds.
const (
	OpFence  = "fence"
	OpCommit = "commit"
	OpLoad   = "load"
)

// line is one JSON line of a record file.
type line struct {
	ID     string              `json:"id"`
	Phase  string              `json:"phase"` // "call" or "return"
	Worker string              `json:"worker,omitempty"`
	Op     string              `json:"op,omitempty"`
	Shard  shard.ID            `json:"shard,omitempty"`
	Token  shard.Token         `json:"token,omitempty"`
	Offset int64               `json:"offset,omitempty"`
	Result string              `json:"result,omitempty"`
	Error  string              `json:"error,omitempty"`
	CP     *offsets.Checkpoint `json:"cp,omitempty"`
	At     int64               `json:"at"`
}

// Store is an offsets.Store that records every call of the one it wraps.
type Store struct {
	inner   offsets.Store
	worker  string
	process string // worker/pid: distinguishes a restarted worker's calls

	mu  sync.Mutex // one line per write(2), never interleaved
	out io.Writer
	seq atomic.Uint64
}

var _ offsets.Store = (*Store)(nil)

// New records inner's calls by worker to out (typically a file opened by
// OpenFile). The Store does not close out.
func New(inner offsets.Store, out io.Writer, worker string) *Store {
	return &Store{inner: inner, out: out, worker: worker, process: fmt.Sprintf("%s/%d", worker, os.Getpid())}
}

// OpenFile opens path for appending records (creating it), as Store's out.
func OpenFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("offsetlog: %w", err)
	}
	return f, nil
}

func (s *Store) write(l line) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err = s.out.Write(append(b, '\n'))
	return err
}

// record runs call between a call line and a return line.
func (s *Store) record(l line, call func() (*offsets.Checkpoint, error)) error {
	l.ID = fmt.Sprintf("%s/%d", s.process, s.seq.Add(1))
	l.Phase, l.Worker, l.At = "call", s.worker, time.Now().UnixNano()
	if err := s.write(l); err != nil {
		return fmt.Errorf("offsetlog: recording %s of %s: %w", l.Op, l.Shard, err)
	}
	cp, err := call()
	ret := line{ID: l.ID, Phase: "return", Result: ResultOK, CP: cp, At: time.Now().UnixNano()}
	switch {
	case errors.Is(err, offsets.ErrStaleToken):
		ret.Result, ret.Error = ResultStale, err.Error()
	case err != nil:
		ret.Result, ret.Error, ret.CP = ResultError, err.Error(), nil
	}
	// A lost return line leaves the call's outcome unknown, which the
	// checkers allow for; the call's own result still goes to the caller.
	_ = s.write(ret)
	return err
}

// Fence records and forwards the call.
func (s *Store) Fence(ctx context.Context, id shard.ID, t shard.Token) error {
	return s.record(line{Op: OpFence, Shard: id, Token: t}, func() (*offsets.Checkpoint, error) {
		return nil, s.inner.Fence(ctx, id, t)
	})
}

// Commit records and forwards the call.
func (s *Store) Commit(ctx context.Context, id shard.ID, t shard.Token, offset int64) error {
	return s.record(line{Op: OpCommit, Shard: id, Token: t, Offset: offset}, func() (*offsets.Checkpoint, error) {
		return nil, s.inner.Commit(ctx, id, t, offset)
	})
}

// Load records and forwards the call.
func (s *Store) Load(ctx context.Context, id shard.ID) (offsets.Checkpoint, error) {
	var cp offsets.Checkpoint
	err := s.record(line{Op: OpLoad, Shard: id}, func() (*offsets.Checkpoint, error) {
		var err error
		cp, err = s.inner.Load(ctx, id)
		return &cp, err
	})
	return cp, err
}

// Close closes the wrapped store.
func (s *Store) Close() error { return s.inner.Close() }

// ProcessLocal is the recorded store's (offsets.Local): recording does
// not change who sees the offsets.
func (s *Store) ProcessLocal() bool {
	l, ok := s.inner.(offsets.Local)
	return ok && l.ProcessLocal()
}

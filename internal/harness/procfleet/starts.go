package procfleet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/shardlease/shardlease/internal/offsetlog"
)

// StartLog records when each shard's latest handler started, as the
// workers themselves report it: the moment work on the shard resumes. An
// observer's view of the KV lags that by one listing of the prefix, which
// is long at 10,000 shards. The zero value is ready; safe for concurrent
// use.
type StartLog struct {
	mu sync.Mutex
	at map[string]time.Time
}

// Record notes that shard's handler started now (an in-process worker's).
func (l *StartLog) Record(shard string) { l.RecordAt(shard, time.Now()) }

// RecordAt notes that shard's handler started at at (a wall-clock time
// another process reported); an earlier time than one recorded is kept
// out.
func (l *StartLog) RecordAt(shard string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at == nil {
		l.at = map[string]time.Time{}
	}
	if at.After(l.at[shard]) {
		l.at[shard] = at
	}
}

// Last returns the latest start among shards, and whether every one of
// them started after t0.
func (l *StartLog) Last(shards []string, t0 time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Time
	for _, s := range shards {
		at := l.at[s]
		if !at.After(t0) {
			return time.Time{}, false
		}
		if at.After(last) {
			last = at
		}
	}
	return last, true
}

// LatestAfter returns the latest start of any shard after t0, and whether
// there is one.
func (l *StartLog) LatestAfter(t0 time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	latest := t0
	for _, at := range l.at {
		if at.After(latest) {
			latest = at
		}
	}
	return latest, latest.After(t0)
}

// WaitStarted waits, up to within, until every one of shards has a
// handler started after t0 (a claim granted is seen owned a moment before
// its handler starts), and returns Last's answer then.
func (l *StartLog) WaitStarted(ctx context.Context, shards []string, t0 time.Time, within time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(within)
	for {
		last, ok := l.Last(shards, t0)
		if ok || !time.Now().Before(deadline) || ctx.Err() != nil {
			return last, ok
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// NotStarted names the shards of shards with no handler started after t0:
// up to five, and how many in all.
func (l *StartLog) NotStarted(shards []string, t0 time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var missing []string
	for _, s := range shards {
		if !l.at[s].After(t0) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 5 {
		return fmt.Sprintf("%d shards (%s, …)", len(missing), strings.Join(missing[:5], ", "))
	}
	return fmt.Sprintf("%d shards (%s)", len(missing), strings.Join(missing, ", "))
}

// followStarts reads the history file at path as it grows, recording in l
// the time of every handler's start line, until done is closed; then it
// reads it once more to the end.
func followStarts(path string, l *StartLog, done <-chan struct{}) {
	var off int64
	var rest []byte
	for {
		final := false
		select {
		case <-done:
			final = true
		case <-time.After(5 * time.Millisecond):
		}
		off, rest = readStarts(path, off, rest, l)
		if final {
			return
		}
	}
}

// readStarts reads path from off, records the start lines of its complete
// lines in l, and returns the new offset and the incomplete last line.
func readStarts(path string, off int64, rest []byte, l *StartLog) (int64, []byte) {
	fh, err := os.Open(path)
	if err != nil {
		return off, rest // not written yet
	}
	defer fh.Close()
	if _, err := fh.Seek(off, io.SeekStart); err != nil {
		return off, rest
	}
	b, _ := io.ReadAll(bufio.NewReader(fh))
	off += int64(len(b))
	b = append(rest, b...)
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return off, b
		}
		var line struct {
			Phase string `json:"phase"`
			Shard string `json:"shard"`
			At    int64  `json:"at"`
		}
		if json.Unmarshal(b[:i], &line) == nil && line.Phase == offsetlog.PhaseStart {
			l.RecordAt(line.Shard, time.Unix(0, line.At))
		}
		b = b[i+1:]
	}
}

package offsetlog

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Op is one recorded call with its outcome.
type Op struct {
	ID     string // worker/pid/sequence
	Worker string
	Kind   string // OpFence, OpCommit, OpLoad
	Shard  shard.ID
	Token  shard.Token
	Offset int64 // Commit's argument
	Result string
	Error  string
	CP     offsets.Checkpoint // Load's answer (Result ok)
	Start  int64              // wall clock, ns
	End    int64              // wall clock, ns; math.MaxInt64 for ResultUnknown
}

// Process is the worker process that made the call ("worker/pid").
func (o Op) Process() string { return o.ID[:strings.LastIndexByte(o.ID, '/')] }

func (o Op) String() string {
	s := fmt.Sprintf("%s %s(%s, token %d", o.ID, o.Kind, o.Shard, o.Token)
	if o.Kind == OpCommit {
		s += fmt.Sprintf(", offset %d", o.Offset)
	}
	return s + ") → " + o.Result
}

// Interval is one recorded run of a shard handler: from its start line to
// its end line, with the effects it recorded in between.
type Interval struct {
	ID     string // worker/pid/sequence
	Worker string
	Shard  shard.ID
	Token  shard.Token
	Start  int64 // wall clock, ns
	// End is when the handler returned (wall clock, ns), or math.MaxInt64
	// when no end line was written: the process died during the run (or
	// could not write the line), and a checker must close the interval
	// at the process's death, which only the harness knows.
	End     int64
	Effects []Effect
}

// Effect is an act a handler was about to make.
type Effect struct {
	At     int64 // when the claim was checked and allowed it (wall clock, ns)
	Offset int64
}

// Process is the worker process that ran the handler ("worker/pid").
func (iv Interval) Process() string { return iv.ID[:strings.LastIndexByte(iv.ID, '/')] }

func (iv Interval) String() string {
	return fmt.Sprintf("%s ran %s (token %d)", iv.ID, iv.Shard, iv.Token)
}

// Read merges the record files into one history of store calls sorted by
// start time, leaving out the handler runs (see ReadAll).
func Read(paths ...string) ([]Op, error) {
	ops, _, err := ReadAll(paths...)
	return ops, err
}

// ReadAll merges the record files into one history: the store calls and
// the handler runs, each sorted by start time. A call without a return
// line is ResultUnknown with End math.MaxInt64, and so is a run without an
// end line. A truncated last line (the writer killed while writing it) is
// ignored; any other line that does not parse, and a return, effect or end
// line without its call or start, is an error naming file and line.
func ReadAll(paths ...string) ([]Op, []Interval, error) {
	r := reader{calls: map[string]*Op{}, runs: map[string]*Interval{}}
	for _, p := range paths {
		if err := r.file(p); err != nil {
			return nil, nil, err
		}
	}
	ops := make([]Op, 0, len(r.ops))
	for _, o := range r.ops {
		ops = append(ops, *o)
	}
	slices.SortStableFunc(ops, func(a, b Op) int { return cmp.Compare(a.Start, b.Start) })
	ivs := make([]Interval, 0, len(r.ivs))
	for _, iv := range r.ivs {
		ivs = append(ivs, *iv)
	}
	slices.SortStableFunc(ivs, func(a, b Interval) int { return cmp.Compare(a.Start, b.Start) })
	return ops, ivs, nil
}

// reader collects the lines of several files, in file order.
type reader struct {
	calls map[string]*Op
	ops   []*Op
	runs  map[string]*Interval
	ivs   []*Interval
}

func (r *reader) file(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("offsetlog: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var pending error // a bad line is fine only as the file's last
	for n := 1; sc.Scan(); n++ {
		if pending != nil {
			return pending
		}
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.ID == "" {
			pending = fmt.Errorf("offsetlog: %s line %d: not a record: %q", path, n, sc.Text())
			continue
		}
		if err := r.line(l); err != nil {
			return fmt.Errorf("offsetlog: %s line %d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("offsetlog: %s: %w", path, err)
	}
	return nil
}

func (r *reader) line(l line) error {
	switch l.Phase {
	case "call":
		o := &Op{ID: l.ID, Worker: l.Worker, Kind: l.Op, Shard: l.Shard, Token: l.Token, Offset: l.Offset,
			Result: ResultUnknown, Start: l.At, End: math.MaxInt64}
		r.calls[l.ID] = o
		r.ops = append(r.ops, o)
	case "return":
		o := r.calls[l.ID]
		if o == nil {
			return fmt.Errorf("return of %s without its call", l.ID)
		}
		o.Result, o.Error, o.End = l.Result, l.Error, l.At
		if l.CP != nil {
			o.CP = *l.CP
		}
	case PhaseStart:
		iv := &Interval{ID: l.ID, Worker: l.Worker, Shard: l.Shard, Token: l.Token, Start: l.At, End: math.MaxInt64}
		r.runs[l.ID] = iv
		r.ivs = append(r.ivs, iv)
	case PhaseEffect, PhaseEnd:
		iv := r.runs[l.ID]
		if iv == nil {
			return fmt.Errorf("%s of run %s without its start", l.Phase, l.ID)
		}
		if l.Phase == PhaseEnd {
			iv.End = l.At
		} else {
			iv.Effects = append(iv.Effects, Effect{At: l.At, Offset: l.Offset})
		}
	default:
		return fmt.Errorf("phase %q, want call, return, %s, %s or %s", l.Phase, PhaseStart, PhaseEffect, PhaseEnd)
	}
	return nil
}

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

// Read merges the record files into one history sorted by start time. A
// call without a return line is ResultUnknown with End math.MaxInt64. A
// truncated last line (the writer killed while writing it) is ignored;
// any other line that does not parse is an error naming file and line.
func Read(paths ...string) ([]Op, error) {
	calls := map[string]*Op{}
	var order []*Op
	for _, p := range paths {
		if err := readFile(p, calls, &order); err != nil {
			return nil, err
		}
	}
	out := make([]Op, 0, len(order))
	for _, o := range order {
		out = append(out, *o)
	}
	slices.SortStableFunc(out, func(a, b Op) int { return cmp.Compare(a.Start, b.Start) })
	return out, nil
}

func readFile(path string, calls map[string]*Op, order *[]*Op) error {
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
		switch l.Phase {
		case "call":
			o := &Op{ID: l.ID, Worker: l.Worker, Kind: l.Op, Shard: l.Shard, Token: l.Token, Offset: l.Offset,
				Result: ResultUnknown, Start: l.At, End: math.MaxInt64}
			calls[l.ID] = o
			*order = append(*order, o)
		case "return":
			o := calls[l.ID]
			if o == nil {
				return fmt.Errorf("offsetlog: %s line %d: return of %s without its call", path, n, l.ID)
			}
			o.Result, o.Error, o.End = l.Result, l.Error, l.At
			if l.CP != nil {
				o.CP = *l.CP
			}
		default:
			return fmt.Errorf("offsetlog: %s line %d: phase %q, want call or return", path, n, l.Phase)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("offsetlog: %s: %w", path, err)
	}
	return nil
}

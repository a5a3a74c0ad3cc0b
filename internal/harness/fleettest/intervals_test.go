package fleettest

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// interval is the time one worker process acted as a shard's owner: from
// its handler's "handler started" log line to "handler stopped", or to the
// process's death when it was killed.
type interval struct {
	shard      shard.ID
	worker     string
	token      uint64
	start, end time.Time
}

// intervals reads every process's handler intervals, per shard.
func intervals(procs []*proc) map[shard.ID][]interval {
	out := map[shard.ID][]interval{}
	for _, p := range procs {
		open := map[string]interval{}
		for _, l := range p.lines() {
			key := fmt.Sprintf("%s@%d", l.Shard, l.Token)
			switch l.Msg {
			case "handler started":
				open[key] = interval{shard: shard.ID(l.Shard), worker: p.id, token: l.Token, start: l.at()}
			case "handler stopped":
				if iv, ok := open[key]; ok {
					iv.end = l.at()
					out[shard.ID(l.Shard)] = append(out[shard.ID(l.Shard)], iv)
					delete(open, key)
				}
			}
		}
		end, _ := p.exit()
		if p.running() {
			end = time.Now()
		}
		for _, iv := range open {
			iv.end = end
			out[iv.shard] = append(out[iv.shard], iv)
		}
	}
	return out
}

// checkIntervals fails the test if two processes acted as one shard's
// owner at the same time, or if a later owner started with a token not
// above an earlier one. Shards in exempt are skipped (an operator deleted
// their key: the old owner learns of it only through its watch, while the
// fence keeps the next token higher).
func checkIntervals(t *testing.T, procs []*proc, exempt map[shard.ID]bool) {
	t.Helper()
	all := intervals(procs)
	n := 0
	for _, ivs := range all {
		n += len(ivs)
	}
	problems := overlaps(all, exempt)
	for i, p := range problems {
		if i == 10 {
			t.Errorf("… and %d more", len(problems)-10)
			break
		}
		t.Error(p)
	}
	if n == 0 {
		t.Errorf("no handler interval in the workers' logs")
	}
	t.Logf("handler intervals: %d over %d shards, %d problems", n, len(all), len(problems))
}

// overlaps lists every pair of intervals of different workers on one shard
// that overlap, and every later start with a token not above an earlier one.
func overlaps(all map[shard.ID][]interval, exempt map[shard.ID]bool) []string {
	var problems []string
	ts := func(t time.Time) string { return t.Format("15:04:05.000000") }
	for id, ivs := range all {
		if exempt[id] {
			continue
		}
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].start.Before(ivs[j].start) })
		for j := range ivs {
			for i := range j {
				a, b := ivs[i], ivs[j]
				if a.worker != b.worker && b.start.Before(a.end) {
					problems = append(problems, fmt.Sprintf("%s owned by two processes at once: %s (token %d) from %s to %s, and %s (token %d) from %s",
						id, a.worker, a.token, ts(a.start), ts(a.end), b.worker, b.token, ts(b.start)))
				}
				if b.token < a.token || (b.token == a.token && a.worker != b.worker) {
					problems = append(problems, fmt.Sprintf("%s: %s started with token %d after %s had %d", id, b.worker, b.token, a.worker, a.token))
				}
			}
		}
	}
	sort.Strings(problems)
	return problems
}

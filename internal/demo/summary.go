package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/shardlease/shardlease/internal/inproc"
	"github.com/shardlease/shardlease/rebalance"
)

// Summary is the demo's result; with --json it is the last line printed.
type Summary struct {
	Shards               int      `json:"shards"`
	WorkersFinal         int      `json:"workers_final"`
	Owned                int      `json:"owned"`
	MaxMinusMin          int      `json:"max_minus_min"`
	StaleCommitsRejected int64    `json:"stale_commits_rejected"`
	StaleCommitsAccepted int64    `json:"stale_commits_accepted"`
	OffsetRegressions    int64    `json:"offset_regressions"`
	LostCommits          int64    `json:"lost_commits"`
	FalseRejections      int64    `json:"false_rejections"`
	Failovers            int      `json:"failovers"`
	Moves                int      `json:"moves"`
	Committed            int64    `json:"committed"`
	Faults               []string `json:"faults"`
	Seed                 uint64   `json:"seed"`
	DurationSeconds      float64  `json:"duration_s"`
	SettleSeconds        float64  `json:"settle_s"`
	Violations           []string `json:"violations,omitempty"`
}

// fleetState is the fleet as the coordinator sees it now.
type fleetState struct{ workers, owned, spread int }

func (d *demo) fleetState() fleetState {
	snap, err := d.coord.Fleet().Watch(context.Background(), 0)
	if err != nil {
		return fleetState{}
	}
	counts := snap.Counts()
	owned := 0
	for _, n := range counts {
		owned += n
	}
	return fleetState{workers: len(counts), owned: owned, spread: rebalance.Spread(counts)}
}

// handoffs reads, from the assignor's metrics (on whichever worker held the
// role), how many orphaned shards it placed (a failover: their owner's
// session ended) and how many hand-offs it started (rebalance or drain).
func (d *demo) handoffs() (failovers, moves int) {
	families, err := d.reg.Gather()
	if err != nil {
		return 0, 0
	}
	for _, mf := range families {
		if mf.GetName() != "shardlease_assignor_moves_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			switch labelValue(m, "reason") {
			case "orphaned":
				failovers += int(m.GetCounter().GetValue())
			case "rebalance", "drain":
				moves += int(m.GetCounter().GetValue())
			}
		}
	}
	return failovers, moves
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func (d *demo) summarize(settle time.Duration) Summary {
	f := d.fleetState()
	failovers, moves := d.handoffs()
	d.mu.Lock()
	faults := append([]string{}, d.faults...)
	d.mu.Unlock()
	return Summary{
		Shards: d.o.Shards, WorkersFinal: f.workers, Owned: f.owned, MaxMinusMin: f.spread,
		Failovers: failovers, Moves: moves, Faults: faults, Seed: d.o.Seed,
		DurationSeconds: time.Since(d.start).Seconds(), SettleSeconds: settle.Seconds(),
	}
}

// finishAudit copies the auditor's counts, taken after every worker stopped
// so that commits made while draining are judged too.
func (s *Summary) finishAudit(a inproc.AuditCounts) {
	s.StaleCommitsRejected = a.StaleRejected
	s.StaleCommitsAccepted = a.StaleAccepted
	s.OffsetRegressions = a.Regressions
	s.LostCommits = a.LostCommits
	s.FalseRejections = a.FalseRejections
	s.Committed = a.Commits
	check := func(bad bool, format string, args ...any) {
		if bad {
			s.Violations = append(s.Violations, fmt.Sprintf(format, args...))
		}
	}
	check(s.Owned != s.Shards, "%d of %d shards owned at the end", s.Owned, s.Shards)
	check(s.MaxMinusMin > 1, "max−min %d > 1 after the last fault settled", s.MaxMinusMin)
	check(s.StaleCommitsAccepted > 0, "%d stale commits accepted", s.StaleCommitsAccepted)
	check(s.OffsetRegressions > 0, "%d offset regressions", s.OffsetRegressions)
	check(s.LostCommits > 0, "%d owners started below an accepted offset", s.LostCommits)
	check(s.FalseRejections > 0, "%d valid commits rejected", s.FalseRejections)
}

// ErrInvariant: the demo ran, and an invariant failed.
var ErrInvariant = errors.New("demo: invariant failed")

// Err is non-nil when an invariant failed.
func (s Summary) Err() error {
	if len(s.Violations) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvariant, strings.Join(s.Violations, "; "))
}

// Text renders the summary for people.
func (s Summary) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "summary (seed %d, %.1fs, settled %.1fs after the end):\n", s.Seed, s.DurationSeconds, s.SettleSeconds)
	fmt.Fprintf(&b, "  shards owned          %d/%d by %d workers, max−min %d\n", s.Owned, s.Shards, s.WorkersFinal, s.MaxMinusMin)
	fmt.Fprintf(&b, "  commits accepted      %d\n", s.Committed)
	fmt.Fprintf(&b, "  stale commits         %d rejected by the fence, %d accepted\n", s.StaleCommitsRejected, s.StaleCommitsAccepted)
	fmt.Fprintf(&b, "  offset regressions    %d, lost commits %d\n", s.OffsetRegressions, s.LostCommits)
	fmt.Fprintf(&b, "  failovers             %d shards taken from dead sessions\n", s.Failovers)
	fmt.Fprintf(&b, "  rebalancing moves     %d\n", s.Moves)
	for _, f := range s.Faults {
		fmt.Fprintf(&b, "  fault                 %s\n", f)
	}
	if err := s.Err(); err != nil {
		fmt.Fprintf(&b, "FAILED: %v\n", err)
	} else {
		b.WriteString("every invariant held\n")
	}
	return b.String()
}

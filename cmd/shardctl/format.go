package main

import (
	"fmt"
	"time"

	"github.com/shardlease/shardlease/internal/fleetview"
)

// stamp shows a moment as a clock time (with the date when it is not
// today) and how long ago it was.
func stamp(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	t = t.In(now.Location())
	layout := "15:04:05"
	if y, m, d := t.Date(); y != now.Year() || m != now.Month() || d != now.Day() {
		layout = "2006-01-02 15:04:05"
	}
	return fmt.Sprintf("%s (%s ago)", t.Format(layout), ago(now.Sub(t)))
}

// ago rounds an age for people: 42s, 5m12s, 3h04m, 12d.
func ago(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// short cuts a session ID to what tells sessions apart on one screen.
func short(s string) string {
	switch {
	case s == "":
		return "-"
	case len(s) > 12: // a Consul UUID: its first block tells sessions apart
		return s[:8]
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// headline is the fleet in one line.
func headline(f fleetview.Fleet) string {
	s := f.Summary
	line := fmt.Sprintf("owned %d/%d · workers %d live", s.Owned, s.Shards, s.Live)
	if s.Draining > 0 {
		line += fmt.Sprintf(" (%d draining)", s.Draining)
	}
	if s.Dead > 0 {
		line += fmt.Sprintf(", %d dead", s.Dead)
	}
	line += fmt.Sprintf(" · imbalance %d · moves pending %d", s.Imbalance, s.PendingMoves)
	if s.PendingMoves > 0 {
		line += fmt.Sprintf(" (hand-offs %d, placements %d)", s.HandOffs, s.Placements)
	}
	if s.Orphaned > 0 {
		line += fmt.Sprintf(" · %d orphaned", s.Orphaned)
	}
	return line
}

// assignorLine says who holds P/assignor: "w3 (epoch 91, since 12:00:08
// (3m12s ago))".
func assignorLine(a fleetview.Assignor, now time.Time) string {
	switch {
	case !a.Held && a.Problem != "":
		return "none: " + a.Problem
	case !a.Held:
		return "none (P/assignor is free: between two assignors, or no worker has campaigned yet)"
	case a.Worker == "":
		return fmt.Sprintf("held by session %s (epoch %d), whose value cannot be read: %s", short(string(a.Session)), a.Epoch, a.Problem)
	}
	return fmt.Sprintf("%s (epoch %d, since %s)", a.Worker, a.Epoch, stamp(a.Since, now))
}

// workerState is a worker's state with its operator's marks: "live
// cordoned", "dead returning".
func workerState(w fleetview.Worker) string {
	s := w.State
	if w.Cordon != nil && w.Live() {
		s += " cordoned"
	}
	if w.Returning {
		s += " returning"
	}
	return s
}

// queueLine is the move queue in one line, empty when nothing moves or
// waits: "move queue: 3 hand-offs in flight of a budget of 16 · 5 waiting".
func queueLine(f fleetview.Fleet) string {
	q := f.Queue
	if q.InFlight == 0 && q.Queued == 0 {
		return ""
	}
	line := fmt.Sprintf("move queue: %d hand-offs in flight", q.InFlight)
	if q.Budget > 0 {
		line += fmt.Sprintf(" of a budget of %d", q.Budget)
	}
	line += fmt.Sprintf(" · %d waiting", q.Queued)
	if f.Freeze != nil && q.Queued > 0 {
		line += " (until the freeze is lifted)"
	}
	return line
}

// until shows a moment ahead: "12:00:38 (in 25s)".
func until(t, now time.Time) string {
	t = t.In(now.Location())
	return fmt.Sprintf("%s (in %s)", t.Format("15:04:05"), ago(t.Sub(now)))
}

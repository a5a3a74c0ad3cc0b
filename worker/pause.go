package worker

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// pauseTick is how often the pause detector wakes. A wake-up that arrives
// late by more than a tick was delayed by the process itself: a GC pause,
// CPU starvation, a stopped VM.
const pauseTick = 100 * time.Millisecond

// measurePauses records scheduler lag and warns when one pause eats more
// than half of the lease policy's pause budget: past the whole budget, the
// coordinator may hand this worker's shards to others while it sleeps.
func (w *Worker) measurePauses(ctx context.Context) {
	t := time.NewTicker(pauseTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := time.Now()
			lag := now.Sub(last) - pauseTick
			last = now
			if lag < 0 {
				lag = 0
			}
			w.m.pauseSeconds.Observe(lag.Seconds())
			if budget := w.cfg.Policy.PauseBudget; lag > budget/2 {
				w.log.Warn("process paused; this eats into the lease pause budget",
					zap.Duration("pause", lag), zap.Duration("pause_budget", budget))
			}
		}
	}
}

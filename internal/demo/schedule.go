package demo

import (
	"context"
	"time"
)

// The fault schedule repeats every cycle: a crash, then a pause that
// outlasts the TTL, then a join. A fault is played only if the fleet has
// settleTime after it (after the pause ends, for a pause) before the end of
// the run, so the final summary judges a settled fleet. cycle and
// settleTime are the minimums; a backend that invalidates sessions more
// slowly than the embedded one stretches them (Options.cycle, settleTime).
const (
	cycle      = 20 * time.Second
	settleTime = 6 * time.Second
	crashAt    = 5 * time.Second
	pauseAt    = 8 * time.Second
	joinAt     = 13 * time.Second
)

type fault struct {
	at    time.Duration
	lasts time.Duration
	play  func() string
}

// play runs the schedule until the duration has passed or ctx ends,
// printing a progress line every o.Progress.
func (d *demo) play(ctx context.Context) {
	pauseFor, settle := d.o.pauseFor(), d.o.settleTime()
	progress := time.NewTicker(d.o.Progress)
	defer progress.Stop()
	var end <-chan time.Time
	if d.o.Duration > 0 {
		t := time.NewTimer(d.o.Duration)
		defer t.Stop()
		end = t.C
	}
	paused := ""
	for c := time.Duration(0); ; c += d.o.cycle() {
		for _, f := range []fault{
			{at: c + crashAt, play: func() string {
				return d.crash(d.pickOwner(ctx, paused, settle))
			}},
			{at: c + pauseAt, lasts: pauseFor, play: func() string {
				m := d.pickOwner(ctx, "", settle)
				paused = m.ID
				return d.pause(m, pauseFor)
			}},
			{at: c + joinAt, play: func() string {
				id := d.nextID()
				if err := d.spawn(id); err != nil {
					return "join failed: " + err.Error()
				}
				return "join " + id
			}},
		} {
			if d.o.Duration > 0 && f.at+f.lasts+settle > d.o.Duration {
				// No room to settle after this fault: wait out the run.
				f.at = d.o.Duration + time.Hour
			}
			due := time.NewTimer(time.Until(d.start.Add(f.at)))
			for waiting := true; waiting; {
				select {
				case <-ctx.Done():
					due.Stop()
					return
				case <-end:
					due.Stop()
					return
				case <-progress.C:
					d.report()
				case <-due.C:
					what := f.play()
					d.mu.Lock()
					d.faults = append(d.faults, what)
					d.mu.Unlock()
					d.say("fault: %s", what)
					waiting = false
				}
			}
		}
	}
}

// pickOwner is pick once a live worker other than except owns a shard,
// waiting up to within for one: a fault on a worker that owns nothing
// shows nothing (no failover, no late commit to fence), and on a starved
// machine every worker can be between a step-down and its rejoin at the
// moment a fault is due.
func (d *demo) pickOwner(ctx context.Context, except string, within time.Duration) *member {
	for deadline := time.Now().Add(within); time.Now().Before(deadline) && ctx.Err() == nil; {
		if m := d.pick(except); len(m.Worker().Status().Owned()) > 0 {
			return m
		}
		time.Sleep(100 * time.Millisecond)
	}
	return d.pick(except)
}

// pick chooses a random live worker other than except, preferring ones
// that own shards.
func (d *demo) pick(except string) *member {
	var candidates, owning []*member
	for _, m := range d.fleet.Running() {
		if m.ID == except {
			continue
		}
		candidates = append(candidates, m)
		if len(m.Worker().Status().Owned()) > 0 {
			owning = append(owning, m)
		}
	}
	if len(owning) > 0 {
		candidates = owning
	}
	return candidates[d.rng.IntN(len(candidates))]
}

// settle waits (at most 15 s, or the backend's settling time if longer)
// until every shard is owned by a live worker and counts differ by at most
// one, and reports how long that took.
func (d *demo) settle(ctx context.Context) time.Duration {
	began := time.Now()
	deadline := began.Add(max(15*time.Second, d.o.settleTime()))
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if f := d.fleetState(); f.owned == d.o.Shards && f.spread <= 1 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(began)
}

// report prints one progress line.
func (d *demo) report() {
	f := d.fleetState()
	a := d.store.Counts()
	failovers, moves := d.handoffs()
	d.say("workers %2d live · owned %d/%d · max−min %d · commits %d · stale rejected %d · failovers %d · moves %d",
		f.workers, f.owned, d.o.Shards, f.spread, a.Commits, a.StaleRejected, failovers, moves)
}

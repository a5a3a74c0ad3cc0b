package assignor

import "time"

// writeLag keeps the stuck verdict from counting the assignor's own write
// against a worker. A key records when its shards were given as the time
// the step decided (its WaitingSince), but a worker can take them only
// once the key is written, and a large write can take seconds (on etcd a
// cold start's thousand keys are paced by etcd's apply: 4 to 9 s at 1,000
// × 100,000). Judged from the decision, the workers whose keys went last
// were marked stuck moments after they got them, their shares went
// elsewhere, and the fleet was balanced again only by hand-offs after
// their verdicts, 30 s later. So while keys of a slow write may still be
// waiting, StuckAfter is lengthened by how long that write took. It is the
// assignor's memory only, like the cold-start gather: a new assignor
// judges by StuckAfter alone.
type writeLag struct {
	lag   time.Duration // from the decision to the end of the slowest recent write
	until time.Time     // when the keys of that write are judged by StuckAfter alone again
}

// stuckAfter is the StuckAfter to judge by at now, base being the
// policy's.
func (w *writeLag) stuckAfter(base time.Duration, now time.Time) time.Duration {
	if now.Before(w.until) {
		return base + w.lag
	}
	return base
}

// wrote records a write of a step decided at decided that ended at now.
func (w *writeLag) wrote(decided, now time.Time, base time.Duration) {
	lag := now.Sub(decided)
	if !now.Before(w.until) {
		w.lag = 0
	}
	w.lag = max(w.lag, lag)
	w.until = later(w.until, now.Add(base+w.lag))
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

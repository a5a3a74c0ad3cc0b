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
// A write's lag counts for a StuckAfter from its end (the keys it wrote
// have had a whole StuckAfter then), at most base: a write that took
// longer than StuckAfter itself (one cut short by the coordinator's
// timeouts) must not put the verdict off further. A faster write inside
// that window changes nothing: it neither shortens nor extends it.
func (w *writeLag) wrote(decided, now time.Time, base time.Duration) {
	lag := min(now.Sub(decided), base)
	if now.Before(w.until) && lag < w.lag {
		return
	}
	w.lag, w.until = lag, now.Add(base+lag)
}

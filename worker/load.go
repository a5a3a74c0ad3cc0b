package worker

import (
	"math"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/shard"
)

// ReportLoad tells the worker the current load of the claim's shard (any
// non-negative unit, the same for every shard of the fleet: events per
// second, CPU seconds per second). The worker smooths it (an exponentially
// weighted mean with half-life Config.LoadHalfLife, the reported value
// holding until the next report) and carries it to the assignor in its
// loads key (shard.Members.ReportLoad) at a bounded rate (Config.LoadReportEvery). A handler may
// call it as often as it likes; it takes a lock and does no I/O.
//
// A negative, NaN or infinite load is bad input: it is ignored, counted
// (shardlease_load_reports_rejected_total) and logged once per claim. A
// handler that never reports has its load derived from its commit rate
// (accepted Commits per second), smoothed the same way. A Claim made by
// hand (not issued by a Worker) ignores reports.
func (c *Claim) ReportLoad(load float64) {
	if c.load == nil {
		return
	}
	if math.IsNaN(load) || math.IsInf(load, 0) || load < 0 {
		if c.load.reject() {
			c.w.log.Warn("a handler reported a load that is not a finite number ≥ 0; ignoring it (logged once per claim)",
				zap.String("shard", string(c.Shard)), zap.Float64("load", load))
		}
		c.w.m.load.rejected.Inc()
		return
	}
	c.load.report(time.Now(), load)
}

// levelShift is the factor beyond which a reported load is a new level
// rather than noise: a report above levelShift times the smoothed load, or
// below it divided by levelShift, restarts the mean from the report. Noise
// of ±20 % around a level never gets that far from its mean (1.2 ÷ 0.8 is
// the edge), while a shard whose traffic doubles or halves is carried to
// the assignor at its new level at once instead of over several
// half-lives, which would have the assignor under-correct and correct
// again once the first moves had to stay put for MinResidence.
const levelShift = 1.5

// A smaller change is a new level too when it stands out of the shard's
// own noise: more than quietChange of the smoothed load and more than
// quietSigmas times the root mean square of the load's deviations from its
// slow mean (a mean over noiseSpan half-lives). A shard whose load was
// steady has no noise to hide a change in, so a step of 20 % is carried at
// once rather than half after one half-life: a first wave of moves planned
// ten seconds after a change then sees the change whole (a run left a
// worker at 0.899 × the mean, seen as 0.98 when the wave was planned). A
// noisy shard's deviations are its noise, so its noise stays smoothed:
// under ±20 % noise four of them is about 0.5 of the load, the levelShift
// edge. The first draws of noise on a shard that was steady are taken as
// levels until their deviations are on record (1.7 a shard, on average,
// for ±20 % noise redrawn every 10 s after a steady minute).
const (
	quietChange = 0.05
	quietSigmas = 4
	noiseSpan   = 3
)

// meter is one owned shard's smoothed load. Reports and commits come from
// the shard's handler; samples from the worker's loop.
type meter struct {
	halfLife time.Duration
	// shifted is called (under mu; it must not block) when a report is a
	// new level, so the loop can carry it before its next regular report.
	shifted func()

	mu       sync.Mutex
	known    bool      // smoothed holds a value
	reported bool      // a handler reported: the commit rate is not used
	smoothed float64   // as of at
	slow     float64   // the mean over noiseSpan half-lives, never restarted, as of at
	devsq    float64   // the mean square of raw − slow over noiseSpan half-lives, as of at
	raw      float64   // the value in force since at
	at       time.Time // time smoothed was last brought up to date
	commits  int       // accepted commits since windowFrom
	from     time.Time // start of the commit-counting window
	rejected bool      // a bad report was logged
}

func newMeter(halfLife time.Duration, now time.Time) *meter {
	return &meter{halfLife: halfLife, from: now, at: now}
}

// advance brings smoothed up to now, raw having held since m.at. The mean
// of a step function decays by 2^(-dt/halfLife) however often it is
// sampled, so irregular reports weigh by the time they were in force.
func (m *meter) advance(now time.Time) {
	dt := now.Sub(m.at)
	if dt <= 0 {
		return
	}
	m.smoothed = m.smoothedAt(now)
	// The slow mean approaches raw as the smoothed one does, more slowly,
	// so raw − slow decays by the same factor q over dt; the mean square
	// of that deviation over dt, in force since m.at, integrates to
	// q·(devsq + d²·(1 − q)), exactly, however long dt is.
	q := math.Exp2(-dt.Seconds() / (noiseSpan * m.halfLife.Seconds()))
	d := m.raw - m.slow
	m.devsq = q * (m.devsq + d*d*(1-q))
	m.slow = m.raw - d*q
	m.at = now
}

// smoothedAt is the smoothed load at now, raw having held since m.at,
// changing nothing.
func (m *meter) smoothedAt(now time.Time) float64 {
	dt := now.Sub(m.at)
	if dt <= 0 {
		return m.smoothed
	}
	decay := math.Exp2(-dt.Seconds() / m.halfLife.Seconds())
	return m.smoothed*decay + m.raw*(1-decay)
}

// start takes v as the first figure: no history, so no noise yet.
func (m *meter) start(now time.Time, v float64) {
	m.known, m.smoothed, m.slow, m.devsq, m.raw, m.at = true, v, v, 0, v, now
}

// report records a handler's load at now.
func (m *meter) report(now time.Time, v float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.reported {
		// The first report replaces anything derived from commits: the
		// handler's own unit wins and is not mixed with commits per second.
		m.reported = true
		m.start(now, v)
		return
	}
	m.advance(now)
	m.raw = v
	if m.isShift(v) {
		m.smoothed = v
		if m.shifted != nil {
			m.shifted()
		}
	}
}

// isShift reports whether v is a new level against the smoothed load
// (levelShift, quietChange).
func (m *meter) isShift(v float64) bool {
	s := m.smoothed
	if v > s*levelShift || v*levelShift < s {
		return true
	}
	d := math.Abs(v - s)
	return d > quietChange*s && d > quietSigmas*math.Sqrt(m.devsq)
}

// commit counts one accepted commit, for a handler that does not report.
func (m *meter) commit() {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.commits++
	m.mu.Unlock()
}

// reject notes a bad report and says whether it is the claim's first.
func (m *meter) reject() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	first := !m.rejected
	m.rejected = true
	return first
}

// sample returns the smoothed load at now and whether there is one. For
// a handler that never reported it first folds in the commit rate of the
// window since the previous sample (only the loop samples, once per
// report interval, so the window is that long).
func (m *meter) sample(now time.Time) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.reported {
		window := now.Sub(m.from)
		if window <= 0 {
			return m.smoothed, m.known
		}
		rate := float64(m.commits) / window.Seconds()
		if !m.known {
			m.start(now, rate)
		} else {
			m.advance(now) // with the previous window's rate
			if m.isShift(rate) {
				m.smoothed = rate // a new level (see levelShift)
			}
		}
		m.raw, m.commits, m.from = rate, 0, now
		return m.smoothed, true
	}
	m.advance(now)
	return m.smoothed, m.known
}

// meters is the worker's meter per shard whose handler runs now.
type meters struct {
	mu  sync.Mutex
	all map[shard.ID]*meter
	// shifts has a value when some meter saw a new level since the loop
	// last looked (capacity 1: many shifts before a report are one).
	shifts chan struct{}
}

// shiftSignal is the channel the loop waits on for new levels.
func (ms *meters) shiftSignal() chan struct{} {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.shifts == nil {
		ms.shifts = make(chan struct{}, 1)
	}
	return ms.shifts
}

// open starts a fresh meter for a shard whose runner starts.
func (ms *meters) open(id shard.ID, halfLife time.Duration) *meter {
	m := newMeter(halfLife, time.Now())
	shifts := ms.shiftSignal()
	m.shifted = func() {
		select {
		case shifts <- struct{}{}:
		default:
		}
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.all == nil {
		ms.all = map[shard.ID]*meter{}
	}
	ms.all[id] = m
	return m
}

// close drops the shard's meter when its runner ends, unless a newer
// runner of the same shard has opened another meanwhile.
func (ms *meters) close(id shard.ID, m *meter) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.all[id] == m {
		delete(ms.all, id)
	}
}

// sample returns every running shard's smoothed load at now, rounded
// (roundLoad); shards without a measurement yet are left out.
func (ms *meters) sample(now time.Time) map[shard.ID]float64 {
	return ms.collect(now, (*meter).sample)
}

// roundLoad keeps three significant digits: the loads key stays short
// and a change below 0.5 % (well under loadChange) is no change.
func roundLoad(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	scale := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*scale) / scale
}

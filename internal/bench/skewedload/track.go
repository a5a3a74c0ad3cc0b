package skewedload

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/shard"
)

// What skewed-load measures of a fleet: the observer's view of who owns
// what, the moves it saw, and from those and the true loads the samples of
// worker load ÷ mean that its figures come from.

// loadTrack follows one fleet's prefix with blocking queries: its latest
// view, the shards' loads as the fleet's member records carry them, and
// every move (a shard whose owner became another worker).
type loadTrack struct {
	mu    sync.Mutex
	cur   procfleet.View
	own   map[shard.ID]float64 // the fleet's own figures: a diagnostic only
	last  map[string]string    // the last owner seen of each shard
	moves []time.Time
}

func newLoadTrack() *loadTrack { return &loadTrack{last: map[string]string{}} }

// follow follows observer's prefix (shard.Follow) until ctx ends.
func (t *loadTrack) follow(ctx context.Context, observer *procfleet.Observer) {
	_ = shard.Follow(ctx, observer.Snapshot, shard.FollowOptions{}, func(snap shard.Snapshot) (time.Time, error) {
		t.see(procfleet.SnapshotView(snap), snap.ShardLoads(), time.Now())
		return time.Time{}, nil
	})
}

// see records view v and the fleet's own loads, seen at at.
func (t *loadTrack) see(v procfleet.View, own map[shard.ID]float64, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for s, w := range v.Owners {
		if prev, ok := t.last[s]; ok && prev != w {
			t.moves = append(t.moves, at)
		}
		t.last[s] = w
	}
	t.cur, t.own = v, own
}

// view is the latest view.
func (t *loadTrack) view() procfleet.View {
	v, _ := t.latest()
	return v
}

// latest is the latest view and the fleet's own loads with it.
func (t *loadTrack) latest() (procfleet.View, map[shard.ID]float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur, t.own
}

// seenMoves are the times of every move seen so far.
func (t *loadTrack) seenMoves() []time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.moves)
}

// loadSample is one observation of a fleet: its highest and lowest worker
// load ÷ the mean; the floor, the heaviest shard's load ÷ the mean, which
// no placement can bring max below; and the same highest and lowest as
// issue 17's band reads them where it cannot hold for every worker (see
// bandRatios).
type loadSample struct {
	at               time.Time
	max, min, floor  float64
	bandMax, bandMin float64
	pinned           int
	members          int // live workers
	// ownBandMax is bandMax from the loads the fleet's member records
	// carry (NaN without them): a diagnostic of the fleet's own view.
	ownBandMax float64
	// noisyBandMax is bandMax from the instantaneous loads, noise
	// included, where bandMax is from the shards' expected loads.
	noisyBandMax float64
}

// sampleLoads computes a sample from view v and the shards' true loads.
// The mean is the fleet's whole load over its live workers, so that a
// shard in hand-off still counts; ok is false without live workers.
func sampleLoads(v procfleet.View, loads map[shard.ID]float64, at time.Time, tol float64) (loadSample, bool) {
	if len(v.Members) == 0 {
		return loadSample{}, false
	}
	per := make(map[string]float64, len(v.Members))
	heaviest := make(map[string]float64, len(v.Members)) // each worker's heaviest shard
	for _, m := range v.Members {
		per[m] = 0
	}
	var total, top float64
	for id, l := range loads {
		total += l
		top = math.Max(top, l)
		if w, ok := v.Owners[string(id)]; ok {
			if _, live := per[w]; live {
				per[w] += l
				heaviest[w] = math.Max(heaviest[w], l)
			}
		}
	}
	mean := total / float64(len(v.Members))
	if !(mean > 0) {
		return loadSample{}, false
	}
	s := loadSample{at: at, max: math.Inf(-1), min: math.Inf(1), floor: top / mean, members: len(v.Members)}
	for _, l := range per {
		s.max, s.min = math.Max(s.max, l/mean), math.Min(s.min, l/mean)
	}
	var ok bool
	if s.bandMax, s.bandMin, s.pinned, ok = bandRatios(per, heaviest, tol); !ok {
		s.bandMax, s.bandMin = s.max, s.min // nothing to pin against: read it plain
	}
	return s, true
}

// bandRatios reads worker loads as issue 17's band does where it cannot
// hold for everyone (rebalance's pin and meanOf): a worker whose heaviest
// shard alone is above the band around the mean of the others is pinned;
// the mean is the workers' load but the pinned workers' heaviest shards
// over the workers not pinned (pinning repeats as it falls), and a pinned
// worker's ratio is 1 plus its other shards' load ÷ that mean, since
// those are to move off. It returns the highest and lowest ratio so read
// and how many workers were pinned; ok is false when no worker is left to
// make a mean of (every one pinned or empty). With no shard that heavy the
// ratios are plain max and min ÷ the mean of what the workers hold.
func bandRatios(per, heaviest map[string]float64, tol float64) (hi, lo float64, pinned int, ok bool) {
	pin := map[string]bool{}
	var mean float64
	for {
		var load float64
		n := 0
		for w, l := range per {
			load += l
			if pin[w] {
				load -= heaviest[w]
			} else {
				n++
			}
		}
		if n == 0 || !(load > 0) {
			return 0, 0, len(pin), false
		}
		mean = load / float64(n)
		more := false
		for w := range per {
			if !pin[w] && heaviest[w] > mean*(1+tol) {
				pin[w], more = true, true
			}
		}
		if !more {
			break
		}
	}
	hi, lo = math.Inf(-1), math.Inf(1)
	for w, l := range per {
		r := l / mean
		if pin[w] {
			r = 1 + (l-heaviest[w])/mean
		}
		hi, lo = math.Max(hi, r), math.Min(lo, r)
	}
	return hi, lo, len(pin), true
}

// inBand reports whether every worker is within the band, read as
// bandRatios reads it.
func (s loadSample) inBand(tol float64) bool {
	return s.bandMax <= 1+tol+1e-9 && s.bandMin >= 1-tol-1e-9
}

// skewedTimeline is when the scenario's phases began.
type skewedTimeline struct {
	skewed  time.Time // the Zipf loads: the count-balanced start
	noise   time.Time // the first noise
	tripled time.Time // the hot shard's load tripled
	end     time.Time
}

// loadFigures are a fleet's figures.
type loadFigures struct {
	ratios     []float64 // max ÷ mean under noise, but while answering the tripling
	bandRatios []float64 // bandMax over the same samples
	ownBand    []float64 // ownBandMax over the same samples, where there is one
	noisyBand  []float64 // noisyBandMax over the same samples
	floor      float64   // the floor's median over the same samples
	pinned     float64   // the median of the workers pinned, the same samples
	converge   float64   // s from the count-balanced start into the band for good (NaN: not in it at the noise)
	// endMax and endMin are the band's reading (bandMax, bandMin) at the
	// last sample before the noise: how far from the band a fleet that
	// did not converge was left.
	endMax, endMin float64
	back           float64 // s from the tripling back into the band (NaN: never)
	leftBand       bool    // the tripling took the fleet out of the band
	noiseMoves     int     // moves under noise, but those answering the tripling
	hotMoves       int     // moves answering the tripling
	noiseMinutes   float64 // the time noiseMoves were counted over
	// leastMembers is the fewest live workers seen from the skew on: fewer
	// than the fleet's means a session lapsed (a starved machine) and the
	// figures measure failover as well as balance.
	leastMembers int
}

func (f loadFigures) String() string {
	return fmt.Sprintf("max ÷ mean under noise p50 %.3f p99 %.3f (floor %.3f), as the band reads it p50 %.3f p99 %.3f; converged after %.1fs; back in the band %.1fs after the tripling (left it: %v); %d moves in %.1f min of noise, %d answering the tripling; at least %d live workers",
		bench.Percentile(f.ratios, 50), bench.Percentile(f.ratios, 99), f.floor, bench.Percentile(f.bandRatios, 50), bench.Percentile(f.bandRatios, 99), f.converge, f.back, f.leftBand, f.noiseMoves, f.noiseMinutes, f.hotMoves, f.leastMembers)
}

// figuresOf computes a fleet's figures from its samples and moves. The
// moves answering the tripling are those from the tripling until the
// fleet is back in the band, or at most hotWindow.
func figuresOf(samples []loadSample, moves []time.Time, tl skewedTimeline, tol float64, hotWindow time.Duration) loadFigures {
	f := loadFigures{converge: math.NaN(), back: math.NaN()}
	var since time.Time // the start of the current stretch in the band
	for _, s := range samples {
		if s.at.Before(tl.skewed) || !s.at.Before(tl.noise) {
			continue
		}
		f.endMax, f.endMin = s.bandMax, s.bandMin
		switch {
		case !s.inBand(tol):
			since = time.Time{}
		case since.IsZero():
			since = s.at
		}
	}
	if !since.IsZero() {
		f.converge = since.Sub(tl.skewed).Seconds()
	}
	first := true
	for _, s := range samples {
		if s.at.Before(tl.tripled) {
			continue
		}
		if first {
			f.leftBand, first = !s.inBand(tol), false
		}
		if s.inBand(tol) {
			f.back = s.at.Sub(tl.tripled).Seconds()
			break
		}
	}
	hotEnd := tl.tripled.Add(hotWindow)
	if !math.IsNaN(f.back) {
		hotEnd = tl.tripled.Add(min(hotWindow, time.Duration(f.back*float64(time.Second))))
	}
	answering := func(at time.Time) bool { return !at.Before(tl.tripled) && at.Before(hotEnd) }
	var floors, pinned []float64
	for _, s := range samples {
		if !s.at.Before(tl.noise) && s.at.Before(tl.end) && !answering(s.at) {
			f.ratios, f.bandRatios = append(f.ratios, s.max), append(f.bandRatios, s.bandMax)
			f.noisyBand = append(f.noisyBand, s.noisyBandMax)
			floors, pinned = append(floors, s.floor), append(pinned, float64(s.pinned))
			if !math.IsNaN(s.ownBandMax) {
				f.ownBand = append(f.ownBand, s.ownBandMax)
			}
		}
	}
	f.floor, f.pinned = bench.Percentile(floors, 50), bench.Percentile(pinned, 50)
	for i, s := range samples {
		if i == 0 || s.members < f.leastMembers {
			f.leastMembers = s.members
		}
	}
	for _, at := range moves {
		switch {
		case answering(at):
			f.hotMoves++
		case !at.Before(tl.noise) && at.Before(tl.end):
			f.noiseMoves++
		}
	}
	f.noiseMinutes = (tl.end.Sub(tl.noise) - hotEnd.Sub(tl.tripled)).Minutes()
	return f
}

// addSample appends sample s, taken after the skew began at skewed, to
// tr.
func addSample(tr *bench.LoadTrace, s loadSample, skewed time.Time) {
	tr.Add(s.at.Sub(skewed).Seconds(), s.bandMax, s.bandMin, s.max, s.floor)
}

// runSkewed plays the loads' timeline from the count-balanced start and
// samples both fleets until its end, then computes their figures.
func runSkewed(ctx context.Context, env *bench.Env, fleets []*skewedFleet, model *loadModel, table *loadTable, shape Params) error {
	tick := time.NewTicker(shape.SampleEvery)
	defer tick.Stop()
	tl := skewedTimeline{skewed: time.Now()}
	table.set(model.loads())
	nextNoise := tl.skewed.Add(shape.Converge)
	hotAt, endAt := nextNoise.Add(shape.HotAfter), nextNoise.Add(shape.Noise)
	samples := make([][]loadSample, len(fleets))
	for n := 0; ; n++ {
		now := time.Now()
		if !now.Before(endAt) {
			tl.end = now
			break
		}
		changed := false
		if !now.Before(nextNoise) {
			if tl.noise.IsZero() {
				tl.noise = now
				env.Logf("shardbench: skewed-load: noise begins, %v after the skew", now.Sub(tl.skewed).Round(time.Millisecond))
			}
			model.renoise()
			nextNoise, changed = nextNoise.Add(shape.NoiseEvery), true
		}
		if !model.hotOn && !now.Before(hotAt) {
			model.hotOn, tl.tripled, changed = true, now, true
			env.Logf("shardbench: skewed-load: shard %s's load tripled, %v into the noise", model.ids[model.hot], now.Sub(tl.noise).Round(time.Millisecond))
		}
		if changed {
			table.set(model.loads())
		}
		loads, expected := table.current(), model.expected()
		for i, sf := range fleets {
			v, own := sf.track.latest()
			s, ok := sampleLoads(v, expected, now, skewedTolerance)
			noisy, _ := sampleLoads(v, loads, now, skewedTolerance)
			if !ok {
				continue
			}
			// Plain max ÷ mean and its floor are the instantaneous loads';
			// the band is read on the expected ones (loadModel.expected).
			s.max, s.min, s.floor, s.noisyBandMax = noisy.max, noisy.min, noisy.floor, noisy.bandMax
			s.ownBandMax = math.NaN()
			if o, ok := sampleLoads(v, own, now, skewedTolerance); ok && len(own) > 0 {
				s.ownBandMax = o.bandMax
			}
			samples[i] = append(samples[i], s)
			if n%shape.TraceEvery == 0 || changed {
				addSample(sf.trace, s, tl.skewed)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	for i, sf := range fleets {
		sf.trace.NoiseS, sf.trace.TripledS = tl.noise.Sub(tl.skewed).Seconds(), tl.tripled.Sub(tl.skewed).Seconds()
		sf.fig = figuresOf(samples[i], sf.track.seenMoves(), tl, skewedTolerance, shape.HotWindow)
	}
	return nil
}

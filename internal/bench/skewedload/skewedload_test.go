package skewedload

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/shard"
)

// TestLoadModel: the loads are Zipf with exponent 1.1 over the shards at a
// mean of 1, the same for the same seed and in another order for another;
// the hot shard tripled stays under one worker's mean load; the noise
// keeps every load within ±20 % of its base, and the expected loads are
// the bases without it.
func TestLoadModel(t *testing.T) {
	ids := shard.Config{Shards: 128}.IDs()
	m := newLoadModel(ids, 12, skewedSeed)
	sorted := slices.Sorted(func(yield func(float64) bool) {
		for _, b := range m.base {
			yield(b)
		}
	})
	slices.Reverse(sorted)
	var sum float64
	for k, b := range sorted {
		sum += b
		if want := sorted[0] * math.Pow(float64(k+1), -1.1); math.Abs(b-want) > 1e-9 {
			t.Fatalf("the %d-th heaviest load is %v, want %v (Zipf 1.1)", k+1, b, want)
		}
	}
	if math.Abs(sum/128-1) > 1e-9 {
		t.Errorf("mean load %v, want 1", sum/128)
	}
	if other := newLoadModel(ids, 12, skewedSeed+1); slices.Equal(other.base, m.base) {
		t.Error("another seed gave the same order")
	}
	if again := newLoadModel(ids, 12, skewedSeed); !slices.Equal(again.base, m.base) || again.hot != m.hot {
		t.Error("the same seed gave other loads")
	}
	if m.hot < 0 || 3*m.base[m.hot] >= 128.0/12 {
		t.Errorf("hot shard %d with load %v: tripled it does not fit one worker's mean load", m.hot, m.base[m.hot])
	}
	for range 5 {
		m.renoise()
		for i, id := range ids {
			if r := m.loads()[id] / m.base[i]; r < 0.8 || r > 1.2 {
				t.Fatalf("shard %s at %v × its base, want within ±20 %%", id, r)
			}
		}
	}
	m.hotOn = true
	if r := m.loads()[ids[m.hot]] / (m.base[m.hot] * m.noise[m.hot]); math.Abs(r-3) > 1e-9 {
		t.Errorf("the hot shard is %v × its noisy load, want 3", r)
	}
	// The expected loads are the bases without the noise, the hot one tripled.
	for i, id := range ids {
		want := m.base[i]
		if i == m.hot {
			want *= 3
		}
		if got := m.expected()[id]; got != want {
			t.Fatalf("shard %s's expected load %v, want %v (its base, without the noise %v)", id, got, want, m.noise[i])
		}
	}
}

// TestSampleLoads: worker load is the true loads of the shards it owns;
// the mean counts a shard nobody holds, and a worker that is no member
// counts for nothing.
func TestSampleLoads(t *testing.T) {
	loads := map[shard.ID]float64{"a": 6, "b": 2, "c": 1, "d": 1, "e": 2, "f": 1, "g": 1}
	v := procfleet.View{Owners: map[string]string{"a": "w1", "b": "w2", "c": "w2", "d": "gone", "e": "w3", "f": "w3", "g": "w4"}, Members: []string{"w1", "w2", "w3", "w4"}}
	s, ok := sampleLoads(v, loads, time.Unix(0, 0), 0.10)
	// total 14 over 4 members: mean 3.5; w1 6, w2 and w3 3, w4 1. As the
	// band reads it, w1's shard a (6) is above the band around the mean of
	// what the workers hold, 13 ÷ 4: w1 is pinned, the mean is then 7/3
	// (w1's only shard left out), w1 reads 1 + 0, w2 and w3 9/7, w4 3/7.
	if !ok || math.Abs(s.max-6/3.5) > 1e-9 || math.Abs(s.min-1/3.5) > 1e-9 || math.Abs(s.floor-6/3.5) > 1e-9 ||
		s.pinned != 1 || math.Abs(s.bandMax-9.0/7) > 1e-9 || math.Abs(s.bandMin-3.0/7) > 1e-9 {
		t.Errorf("sample %+v, %v; want max 1.714, min 0.286, floor 1.714; pinned 1, band max 1.286, band min 0.429", s, ok)
	}
	if _, ok := sampleLoads(procfleet.View{Owners: v.Owners}, loads, time.Unix(0, 0), 0.10); ok {
		t.Error("a sample without members: want none")
	}
}

// TestBandRatios: pinning repeats as the mean falls; with no shard above
// the band the ratios are plain; the band holds on both sides.
func TestBandRatios(t *testing.T) {
	for _, tc := range []struct {
		name          string
		per, heaviest map[string]float64
		hi, lo        float64
		pinned        int
		ok            bool
	}{
		{"none heavy", map[string]float64{"a": 11, "b": 10, "c": 9}, map[string]float64{"a": 3, "b": 2, "c": 2}, 1.1, 0.9, 0, true},
		// a's 20 is above 1.1 × 50 ÷ 4; then b's 11.5 is above 1.1 × 30 ÷ 3
		// (a's other shard counts); the mean is then 18.5 ÷ 2 = 9.25, a
		// reads 1 + 1 ÷ 9.25 and b 1 + 0.
		{"pinned twice", map[string]float64{"a": 21, "b": 11.5, "c": 9, "d": 8.5}, map[string]float64{"a": 20, "b": 11.5, "c": 5, "d": 5}, 1 + 1/9.25, 8.5 / 9.25, 2, true},
		{"nobody left", map[string]float64{"a": 5, "b": 0}, map[string]float64{"a": 5}, 0, 0, 1, false},
	} {
		hi, lo, pinned, ok := bandRatios(tc.per, tc.heaviest, 0.10)
		if math.Abs(hi-tc.hi) > 1e-9 || math.Abs(lo-tc.lo) > 1e-9 || pinned != tc.pinned || ok != tc.ok {
			t.Errorf("%s: hi %v lo %v pinned %d ok %v; want %v %v %d %v", tc.name, hi, lo, pinned, ok, tc.hi, tc.lo, tc.pinned, tc.ok)
		}
	}
	for _, tc := range []struct {
		s    loadSample
		want bool
	}{{loadSample{bandMax: 1.1, bandMin: 0.9}, true}, {loadSample{bandMax: 1.11, bandMin: 1}, false}, {loadSample{bandMax: 1, bandMin: 0.89}, false}} {
		if tc.s.inBand(0.10) != tc.want {
			t.Errorf("%+v in the band: want %v", tc.s, tc.want)
		}
	}
}

// TestFiguresOf: convergence is the start of the last stretch in the band
// before the noise; back is the first sample in the band after the
// tripling; the moves until then are counted apart from the noise's.
func TestFiguresOf(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tl := skewedTimeline{skewed: at(0), noise: at(10), tripled: at(20), end: at(40)}
	maxes := []float64{
		1.5, 1.05, 1.3, 1.08, 1.09, 1.1, 1.02, 1.04, 1.06, 1.05, // convergence: in the band from 3 s on
		1.05, 1.06, 1.07, 1.08, 1.09, 1.05, 1.04, 1.03, 1.02, 1.01, // noise
		1.6, 1.4, 1.2, 1.09, 1.05, 1.04, 1.03, 1.05, 1.06, 1.07, // tripled at 20 s, back at 23 s
		1.08, 1.09, 1.1, 1.05, 1.04, 1.03, 1.02, 1.01, 1.0, 1.05,
	}
	var samples []loadSample
	for i, m := range maxes {
		samples = append(samples, loadSample{at: at(float64(i)), max: m + 1, bandMax: m, bandMin: 0.95, floor: 0.5, members: 3 - i/39, ownBandMax: math.NaN()})
	}
	moves := []time.Time{at(1), at(2), at(12), at(20.5), at(22), at(25), at(39), at(41)}
	f := figuresOf(samples, moves, tl, 0.10, 10*time.Second)
	if f.converge != 3 || f.back != 3 || !f.leftBand || f.hotMoves != 2 || f.noiseMoves != 3 || math.Abs(f.noiseMinutes-27.0/60) > 1e-9 {
		t.Errorf("figures %+v; want converged after 3 s, back after 3 s having left the band, 2 hot moves, 3 noise moves over 27 s", f)
	}
	if f.endMax != 1.05 || f.endMin != 0.95 {
		t.Errorf("band at the end of the convergence window %v..%v, want the last sample before the noise's 0.95..1.05", f.endMin, f.endMax)
	}
	if len(f.ownBand) != 0 {
		t.Errorf("own view %v from samples without one", f.ownBand)
	}
	if f.leastMembers != 2 {
		t.Errorf("least live workers %d, want 2", f.leastMembers)
	}
	if len(f.ratios) != 27 || slices.Max(f.bandRatios) != 1.1 || slices.Max(f.ratios) != 2.1 {
		t.Errorf("ratios %v: want the 27 noise samples but the 3 answering the tripling", f.ratios)
	}

	// Out of the band at the noise and never back: no figure, and every
	// move within the hot window answers the tripling.
	for i := range samples {
		samples[i].bandMax = 1.5
	}
	f = figuresOf(samples, moves, tl, 0.10, 10*time.Second)
	if !math.IsNaN(f.converge) || !math.IsNaN(f.back) || f.hotMoves != 3 || f.noiseMoves != 2 {
		t.Errorf("figures %+v; want no convergence, never back, 3 hot moves and 2 noise moves", f)
	}
}

// TestSkewedRows: the load-aware fleet's rows carry the goals and the
// count-based fleet's none; the instantaneous band row has none (the band
// is judged on the expected loads), nor the plain ratio when the heaviest
// shard puts it out of reach; a fleet that never reached the band misses
// its goal with the window as its figure and a note saying so.
func TestSkewedRows(t *testing.T) {
	env := &bench.Env{Trials: 1}
	shape := Sizes.For(&bench.Env{Small: true})
	model := newLoadModel(shard.Config{Shards: shape.Shards}.IDs(), shape.Workers, skewedSeed)
	fig := loadFigures{ratios: []float64{1.05, 1.08}, bandRatios: []float64{1.05, 1.08}, noisyBand: []float64{1.2, 1.3}, floor: 0.6, converge: math.NaN(), endMax: 1.05, endMin: 0.89, back: 4, noiseMoves: 3, hotMoves: 2, noiseMinutes: 0.25, leastMembers: shape.Workers}
	aware := skewedRows(env, shape, &skewedFleet{system: bench.SystemShardlease, fig: fig, trace: &bench.LoadTrace{}}, &model)
	counted := skewedRows(env, shape, &skewedFleet{system: bench.SystemCountBased, fig: fig, trace: &bench.LoadTrace{}}, &model)
	if len(aware) != 6 || len(counted) != 6 {
		t.Fatalf("%d and %d rows, want 6 each", len(aware), len(counted))
	}
	wantMet := []*bool{new(true), new(true), nil, new(false), new(false), new(true)} // 12 moves a minute miss the goal of 2
	for i, r := range aware {
		if (r.Met == nil) != (wantMet[i] == nil) || (r.Met != nil && *r.Met != *wantMet[i]) || r.Trials != 1 {
			t.Errorf("load-aware %s: met %v, %d trials; want met %v, 1 trial", r.Metric, r.Met, r.Trials, wantMet[i])
		}
		if counted[i].Met != nil || counted[i].System != bench.SystemCountBased || counted[i].Metric != r.Metric {
			t.Errorf("count-based %s: want the same metric without a goal, got %+v", r.Metric, counted[i])
		}
	}
	if aware[2].P50 != 1.2 || aware[2].P99 != 1.3 {
		t.Errorf("instantaneous band row p50 %v p99 %v, want the noisy samples' 1.2 and 1.3", aware[2].P50, aware[2].P99)
	}
	if aware[3].P50 != shape.Converge.Seconds() || !strings.Contains(aware[3].Note, "the figure is the window") || aware[3].Extra["end_band_min"] != 0.89 {
		t.Errorf("never converged: figure %v, note %q", aware[3].P50, aware[3].Note)
	}
	if strings.Contains(aware[0].Note, "lapsed") {
		t.Errorf("no worker lapsed, yet the note says so: %q", aware[0].Note)
	}
	fig.leastMembers = shape.Workers - 1
	if r := skewedRows(env, shape, &skewedFleet{system: bench.SystemShardlease, fig: fig, trace: &bench.LoadTrace{}}, &model); !strings.Contains(r[4].Note, "lapsed") {
		t.Errorf("a worker lapsed, and the moves row does not say so: %q", r[4].Note)
	}
	if aware[4].P50 != 12 || aware[4].Extra["hot_moves"] != 2 || aware[0].Trace == nil {
		t.Errorf("moves row %+v, ratio row's trace %v", aware[4], aware[0].Trace)
	}
	fig.floor = 2.6
	if r := skewedRows(env, shape, &skewedFleet{system: bench.SystemShardlease, fig: fig, trace: &bench.LoadTrace{}}, &model); r[0].Met != nil || !strings.Contains(r[0].Note, "out of reach") {
		t.Errorf("a floor of 2.6: the plain ratio row has goal %v and note %q, want none and a note saying it is out of reach", r[0].Met, r[0].Note)
	}
}

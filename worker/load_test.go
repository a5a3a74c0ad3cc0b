package worker

import (
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/shard"
)

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-9*max(1, math.Abs(want)) }

// TestMeterHalfLife: a step from 10 to 10.4 (under quietChange: not a new
// level) is half seen after one half-life and 7/8 after three, however
// often the handler reports.
func TestMeterHalfLife(t *testing.T) {
	for _, every := range []time.Duration{0, 100 * time.Millisecond, 3 * time.Second} {
		synctest.Test(t, func(t *testing.T) {
			m := newMeter(10*time.Second, time.Now())
			if _, ok := m.sample(time.Now()); ok {
				// Nothing reported, no commits, a zero-length window: no figure.
				t.Fatalf("a fresh meter has a figure")
			}
			m.report(time.Now(), 10)
			if v, ok := m.sample(time.Now()); !ok || v != 10 {
				t.Fatalf("first report: %v %v, want 10 at once", v, ok)
			}
			start := time.Now()
			m.report(start, 10.4)
			for _, c := range []struct {
				at   time.Duration
				want float64
			}{{10 * time.Second, 10.2}, {30 * time.Second, 10.35}} {
				for every > 0 && time.Since(start)+every <= c.at {
					time.Sleep(every)
					m.report(time.Now(), 10.4)
				}
				time.Sleep(c.at - time.Since(start))
				if v, _ := m.sample(time.Now()); !near(v, c.want) {
					t.Fatalf("reports every %v: %v after the step: %v, want %v", every, c.at, v, c.want)
				}
			}
		})
	}
}

// TestMeterCommitRate: a handler that never reports has its commit rate
// as its load, smoothed like a report; its first report replaces it.
func TestMeterCommitRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter(10*time.Second, time.Now())
		commits := func(n int) {
			for range n {
				m.commit()
			}
			time.Sleep(10 * time.Second)
		}
		commits(500)
		if v, ok := m.sample(time.Now()); !ok || !near(v, 50) {
			t.Fatalf("500 commits in 10 s: %v %v, want 50/s", v, ok)
		}
		commits(520)
		// The first window's 50/s held for the half-life just sampled; the
		// new 52/s (4 %: not a new level) is folded in at the next sample.
		if v, _ := m.sample(time.Now()); !near(v, 50) {
			t.Fatalf("second window: %v, want 50 until the 52/s has been in force", v)
		}
		commits(520)
		if v, _ := m.sample(time.Now()); !near(v, 51) {
			t.Fatalf("a half-life of 52/s after 50/s: %v, want 51", v)
		}
		commits(600)
		if v, _ := m.sample(time.Now()); !near(v, 60) {
			t.Fatalf("60/s after a steady 51/s: %v, want 60 at once (a new level)", v)
		}
		m.report(time.Now(), 0.5)
		if v, _ := m.sample(time.Now()); v != 0.5 {
			t.Fatalf("after the first report: %v, want the report, 0.5, not mixed with commits", v)
		}
	})
}

// TestMeterLevelShift: on a shard whose load was steady, a change of
// more than quietChange is a new level, taken at once and signalled, and
// a smaller one is smoothed; once the load is noisy (±20 %, a new value
// every 10 s) a change of 20 % is smoothed like the noise, and one beyond
// levelShift, up or down, is still taken at once. Under that noise only
// the first draws, while the shard had no noise on record, are levels.
func TestMeterLevelShift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ms meters
		m := ms.open("s-000", 10*time.Second)
		signalled := func() bool {
			select {
			case <-ms.shiftSignal():
				return true
			default:
				return false
			}
		}
		m.report(time.Now(), 10) // the first report: taken as it is
		time.Sleep(time.Minute)
		step := func(what string, report, want float64, shift bool) {
			t.Helper()
			m.report(time.Now(), report)
			if got := signalled(); got != shift {
				t.Fatalf("%s: report %v signalled %v, want %v", what, report, got, shift)
			}
			time.Sleep(10 * time.Second)
			if v, _ := m.sample(time.Now()); !near(v, want) {
				t.Fatalf("%s: report %v, a half-life later %v, want %v (a new level: %v)", what, report, v, want, shift)
			}
		}
		step("steady", 10.4, 10.2, false) // 4 %: smoothed
		step("steady", 12, 12, true)      // 18 % of a steady load: at once
		time.Sleep(5 * time.Minute)       // steady again
		step("steady", 10, 10, true)      // and back down

		// Noise: ±20 % around 10, a new value every 10 s for 5 minutes.
		shifts, late := 0, 0
		for k := range 30 {
			v := 8.0
			if k%2 == 0 {
				v = 12
			}
			m.report(time.Now(), v)
			if signalled() {
				shifts++
				if k >= 6 {
					late++
				}
			}
			time.Sleep(10 * time.Second)
		}
		if shifts > 3 || late > 0 {
			t.Fatalf("±20 %% noise: %d reports were new levels, %d after the first minute; want at most 3, none later", shifts, late)
		}
		s, _ := m.sample(time.Now())
		m.report(time.Now(), s*1.2)
		if signalled() {
			t.Fatalf("a noisy load: a report 20 %% above its smoothed %v was a new level, want it smoothed", s)
		}
		m.report(time.Now(), s*1.6)
		if !signalled() {
			t.Fatalf("a noisy load: a report 1.6 × its smoothed %v was not a new level", s)
		}
		if v, _ := m.sample(time.Now()); !near(v, s*1.6) {
			t.Fatalf("a noisy load after a report of 1.6 × %v: %v, want the report", s, v)
		}
	})
}

// TestReportLoadRejectsBadInput: a negative, NaN or infinite load is
// counted and ignored; a hand-made claim ignores reports.
func TestReportLoadRejectsBadInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		met, err := newMetrics("w", "", "", nil, reg)
		if err != nil {
			t.Fatal(err)
		}
		w := &Worker{log: zap.NewNop(), m: met}
		c := &Claim{Claim: shard.Claim{Shard: "s-000"}, w: w, load: newMeter(time.Second, time.Now())}
		c.ReportLoad(4)
		for _, bad := range []float64{-1, math.NaN(), math.Inf(1), math.Inf(-1)} {
			c.ReportLoad(bad)
		}
		time.Sleep(5 * time.Second)
		if v, _ := c.load.sample(time.Now()); v != 4 {
			t.Fatalf("load after bad reports: %v, want 4", v)
		}
		if n := metricValue(t, reg, "shardlease_load_reports_rejected_total"); n != 4 {
			t.Fatalf("rejected reports counted %v, want 4", n)
		}
		(&Claim{}).ReportLoad(3) // no meter, no worker: must not panic
	})
}

func TestRoundLoad(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{0, 0}, {1, 1}, {123.456, 123}, {0.012345, 0.0123}, {98765, 98800}, {math.NaN(), 0}, {math.Inf(1), 0},
	} {
		if got := roundLoad(c.in); !near(got, c.want) {
			t.Errorf("roundLoad(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestLoadChanged(t *testing.T) {
	base := map[shard.ID]float64{"a": 10, "b": 10, "c": 0.1}
	with := func(id shard.ID, v float64) map[shard.ID]float64 {
		m := map[shard.ID]float64{}
		for k, x := range base {
			m[k] = x
		}
		if v < 0 {
			delete(m, id)
		} else {
			m[id] = v
		}
		return m
	}
	for _, c := range []struct {
		name      string
		last, cur map[shard.ID]float64
		want      bool
		settle    bool // a settling write (loadSettle)
	}{
		{"nothing ever", nil, map[shard.ID]float64{}, false, false},
		{"first figures", nil, base, true, false},
		{"same", base, with("a", 10), false, false},
		{"a +4 % of the total", base, with("a", 10.8), false, false},
		{"a +6 % of the total", base, with("a", 11.3), true, false},
		{"tiny shard tripled", base, with("c", 0.3), false, false},
		{"tiny shard grew to 7 % of the total", base, with("c", 1.5), true, false},
		{"every shard +4 %", base, map[shard.ID]float64{"a": 10.4, "b": 10.4, "c": 0.104}, false, false},
		{"every shard +6 %", base, map[shard.ID]float64{"a": 10.6, "b": 10.6, "c": 0.106}, true, false},
		{"two shards swap 4 % of the total", base, map[shard.ID]float64{"a": 10.8, "b": 9.2, "c": 0.1}, false, false},
		{"all zero", map[shard.ID]float64{"a": 0}, map[shard.ID]float64{"a": 0}, false, false},
		{"shard gone", base, with("c", -1), true, false},
		{"shard swapped", base, map[shard.ID]float64{"a": 10, "b": 10, "d": 0.1}, true, false},
		{"settling: a +4 % of the total", base, with("a", 10.8), true, true},
		{"settling: a +0.5 % of the total", base, with("a", 10.1), false, true},
		{"settling: every shard +2 %", base, map[shard.ID]float64{"a": 10.2, "b": 10.2, "c": 0.102}, true, true},
		{"settling: same", base, with("a", 10), false, true},
	} {
		threshold := loadChange
		if c.settle {
			threshold = loadSettle
		}
		if got := loadChanged(c.last, c.cur, threshold); got != c.want {
			t.Errorf("%s: loadChanged = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestLoadConfigProblems(t *testing.T) {
	ok := Config{ID: "w", Fleet: shard.Config{Shards: 4}}
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string // "" : valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"report every 1 s", func(c *Config) { c.LoadReportEvery = time.Second }, ""},
		{"report every 100 ms", func(c *Config) { c.LoadReportEvery = 100 * time.Millisecond }, "load report interval 100ms"},
		{"no reports", func(c *Config) { c.LoadReportEvery = NoLoadReport }, ""},
		{"negative half-life", func(c *Config) { c.LoadHalfLife = -time.Second }, "load half-life -1s"},
		{"NaN tolerance", func(c *Config) { c.LoadBalance = &shard.LoadBalance{Tolerance: math.NaN()} }, "tolerance NaN"},
		{"negative gain", func(c *Config) { c.LoadBalance = &shard.LoadBalance{MinGain: -1} }, "minimum gain -1"},
		{"negative residence", func(c *Config) { c.LoadBalance = &shard.LoadBalance{MinResidence: -time.Second} }, "minimum residence -1s"},
		{"negative patience", func(c *Config) { c.LoadBalance = &shard.LoadBalance{Patience: -time.Second} }, "patience -1s"},
		{"weights", func(c *Config) { c.ShardWeight = func(shard.ID) float64 { return 0.5 } }, ""},
		{"bad weights", func(c *Config) {
			c.ShardWeight = func(id shard.ID) float64 {
				return map[shard.ID]float64{"stream/shard-001": -2, "stream/shard-003": math.Inf(1)}[id]
			}
		}, "2 are not (stream/shard-001: -2, stream/shard-003: +Inf)"},
	} {
		cfg := ok
		c.edit(&cfg)
		err := cfg.ValidateSettings()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", c.name, err)
		case c.want != "" && (err == nil || !contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestCarriesLoad(t *testing.T) {
	lb := &shard.LoadBalance{}
	for _, c := range []struct {
		cfg   Config
		asked bool
		want  bool
	}{
		{Config{}, false, false},
		{Config{}, true, true},
		{Config{LoadBalance: lb}, false, false},
		{Config{LoadReportEvery: 5 * time.Second}, false, true},
		{Config{LoadBalance: lb, LoadReportEvery: NoLoadReport}, false, false},
		{Config{LoadReportEvery: NoLoadReport}, true, false},
	} {
		if got := c.cfg.carriesLoad(c.asked); got != c.want {
			t.Errorf("%+v, asked %v: carriesLoad = %v, want %v", c.cfg, c.asked, got, c.want)
		}
	}
}

// metricValue reads the counter or gauge name from reg (0 when absent).
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() == name && len(fam.GetMetric()) > 0 {
			m := fam.GetMetric()[0]
			return m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return 0
}

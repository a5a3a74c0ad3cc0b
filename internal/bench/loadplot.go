package bench

import (
	"errors"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// The load plot (img/load.svg beside ownership.svg): skewed-load's worker
// load ÷ mean over time for both fleets, as issue 17's band reads it
// (bandRatios), the highest worker as a solid line and the lowest as a
// dashed one in the fleet's colour, the plain highest as a thin one, with the
// tolerance band, the floor the heaviest shard sets, and the moments the
// noise began and the hot shard's load tripled. It is drawn from the
// traces in the run's JSON, so `shardbench docs` redraws it.

// loadPlotName is the load plot's file, beside the ownership plot.
const loadPlotName = "load.svg"

// SystemCountBased is skewed-load's count-balancing fleet in its rows, the
// comparison for the load-aware one (SystemShardlease).
const SystemCountBased = "count-based"

// LoadTrace is a fleet's worker load over the skewed-load scenario as the
// plot draws it: seconds since the loads became skewed, and per sample max
// and min worker load ÷ mean as the band reads them (BandMax, BandMin),
// plain max ÷ mean and the floor.
type LoadTrace struct {
	Tolerance float64   `json:"tolerance"`
	NoiseS    float64   `json:"noise_s"`   // when the noise began
	TripledS  float64   `json:"tripled_s"` // when the hot shard's load tripled
	T         []float64 `json:"t"`
	BandMax   []float64 `json:"band_max"`
	BandMin   []float64 `json:"band_min"`
	Max       []float64 `json:"max"`
	Floor     []float64 `json:"floor"`
}

// Add appends one sample taken t seconds after the skew, rounded to what a
// plot shows.
func (tr *LoadTrace) Add(t, bandMax, bandMin, max, floor float64) {
	round := func(v float64, unit float64) float64 { return math.Round(v/unit) * unit }
	tr.T = append(tr.T, round(t, 0.01))
	tr.BandMax, tr.BandMin = append(tr.BandMax, round(bandMax, 0.001)), append(tr.BandMin, round(bandMin, 0.001))
	tr.Max, tr.Floor = append(tr.Max, round(max, 0.001)), append(tr.Floor, round(floor, 0.001))
}

// loadPlotFleets are the fleets plotted, in legend order, with colours.
var loadPlotFleets = []struct {
	system, label string
	color         color.RGBA
}{
	{SystemShardlease, "load-aware", color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}},
	{SystemCountBased, SystemCountBased, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}},
}

// loadTraces are the run's skewed-load traces by system.
func loadTraces(rs []Result) map[string]*LoadTrace {
	out := map[string]*LoadTrace{}
	for _, r := range rs {
		if r.Scenario == "skewed-load" && r.Trace != nil && len(r.Trace.T) > 0 {
			out[r.System] = r.Trace
		}
	}
	return out
}

// writeLoadPlot draws rep's skewed-load traces to path, whose extension
// chooses the format.
func writeLoadPlot(rep Report, path string) error {
	traces := loadTraces(rep.Results)
	if len(traces) == 0 {
		return errors.New("no skewed-load trace to plot")
	}
	p := plot.New()
	// Short lines, and the legend on the left: a browser without the
	// plot's font draws the text wider than it was measured, and text that
	// ends at the right edge is cut there.
	p.Title.Text = "skewed-load: worker load ÷ mean, per fleet, as the band reads it:\n" +
		"highest (solid) and lowest (dashed) worker; thin: plain highest\n" +
		"(a worker pinned by one shard heavier than the band counts without it)"
	if rep.Small {
		p.Title.Text += "\n--small: not results"
	}
	p.X.Label.Text = "seconds since the loads became skewed (count-balanced start)"
	p.Y.Label.Text = "worker load ÷ mean"
	p.Legend.Top, p.Legend.Left = true, true
	var any *LoadTrace
	hi, end := 1.0, 0.0
	for _, f := range loadPlotFleets {
		tr, ok := traces[f.system]
		if !ok {
			continue
		}
		any = tr
		hi, end = math.Max(hi, math.Max(slices.Max(tr.Max), slices.Max(tr.BandMax))), math.Max(end, slices.Max(tr.T))
		for _, s := range []struct {
			ys     []float64
			dashed bool
			legend bool // the title says which line is which
			width  float64
		}{{tr.BandMax, false, true, 1.2}, {tr.BandMin, true, false, 1.2}, {tr.Max, false, false, 0.5}} {
			l, err := plotter.NewLine(traceXYs(tr.T, s.ys))
			if err != nil {
				return err
			}
			l.LineStyle.Color, l.LineStyle.Width = f.color, vg.Points(s.width)
			if s.dashed {
				l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(l)
			if s.legend {
				p.Legend.Add(f.label, l)
			}
		}
	}
	grey := color.RGBA{R: 0x80, G: 0x80, B: 0x80, A: 0xff}
	floor, err := plotter.NewLine(traceXYs(any.T, any.Floor))
	if err != nil {
		return err
	}
	floor.LineStyle.Color, floor.LineStyle.Dashes = grey, []vg.Length{vg.Points(1), vg.Points(2)}
	p.Add(floor)
	p.Legend.Add("floor: heaviest shard ÷ mean", floor)
	hi = math.Max(hi, slices.Max(any.Floor))
	marks := []struct {
		xys   plotter.XYs
		label string
	}{
		{plotter.XYs{{X: 0, Y: 1 + any.Tolerance}, {X: end, Y: 1 + any.Tolerance}}, "tolerance band"},
		{plotter.XYs{{X: 0, Y: 1 - any.Tolerance}, {X: end, Y: 1 - any.Tolerance}}, ""},
		{plotter.XYs{{X: any.NoiseS, Y: 0}, {X: any.NoiseS, Y: hi}}, "noise begins"},
		{plotter.XYs{{X: any.TripledS, Y: 0}, {X: any.TripledS, Y: hi}}, "hot shard tripled"},
	}
	for i, m := range marks {
		l, err := plotter.NewLine(m.xys)
		if err != nil {
			return err
		}
		l.LineStyle.Color, l.LineStyle.Width = grey, vg.Points(0.8)
		switch i {
		case 2:
			l.LineStyle.Color = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
			l.LineStyle.Dashes = []vg.Length{vg.Points(6), vg.Points(2)}
		case 3:
			l.LineStyle.Color, l.LineStyle.Width = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, vg.Points(1.5)
		}
		p.Add(l)
		if m.label != "" {
			p.Legend.Add(m.label, l)
		}
	}
	p.Y.Min, p.Y.Max = 0, hi*1.5 // room above the lines for the legend
	p.X.Min, p.X.Max = 0, end
	return p.Save(10*vg.Inch, 5*vg.Inch, path)
}

// traceXYs pairs a trace's times with one of its series.
func traceXYs(ts, ys []float64) plotter.XYs {
	n := min(len(ts), len(ys))
	xys := make(plotter.XYs, n)
	for i := range n {
		xys[i] = plotter.XY{X: ts[i], Y: ys[i]}
	}
	return xys
}

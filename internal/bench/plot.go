package bench

import (
	"errors"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The plot: per ownership comparison (a shardlease time row and its
// baselines), each system's time until every shard is owned again, p50 as
// a dot, p99 as a bar across the whisker and max as the whisker's end, on
// a log scale because the default baseline takes tens of seconds where
// shardlease takes tens of milliseconds.

// plotSystems are the systems plotted, in legend order, with their colours.
var plotSystems = []struct {
	name  string
	color color.RGBA
}{
	{SystemShardlease, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}},
	{SystemBaseline, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}},
	{SystemTuned, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}},
}

// plotGroup is one comparison on the x axis.
type plotGroup struct {
	label string
	rows  map[string]Result // by system
}

// ownershipGroups are the comparisons to plot: every shardlease row in
// seconds that has a baseline, in the results' order, but for one with no
// positive p50, which a log scale cannot show.
func ownershipGroups(rs []Result) []plotGroup {
	var out []plotGroup
	for _, r := range rs {
		if r.System != SystemShardlease || r.Unit != "s" || !(r.P50 > 0) {
			continue
		}
		c := Compare(rs, r)
		if c.Baseline == nil && c.Tuned == nil {
			continue
		}
		g := plotGroup{label: r.Scenario, rows: map[string]Result{SystemShardlease: r}}
		if r.Policy != "" {
			g.label += "\n" + r.Policy
		}
		for _, b := range []*Result{c.Baseline, c.Tuned} {
			if b != nil {
				g.rows[b.System] = *b
			}
		}
		out = append(out, g)
	}
	return out
}

// WriteOwnershipPlot draws rep's ownership comparisons to path, whose
// extension (.svg, .png, …) chooses the format.
func WriteOwnershipPlot(rep Report, path string) error {
	groups := ownershipGroups(rep.Results)
	if len(groups) == 0 {
		return errors.New("no shardlease time row with a baseline to plot")
	}

	p := plot.New()
	p.Title.Text = "Time until every shard is owned again\np50 (dot), p99 (bar), max (whisker's end)"
	if rep.Small {
		p.Title.Text += "; --small: not results"
	}
	p.Y.Label.Text = "seconds (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	labels := make([]string, len(groups))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, g := range groups {
		labels[i] = g.label
		for _, r := range g.rows {
			if r.P50 > 0 {
				lo, hi = math.Min(lo, r.P50), math.Max(hi, math.Max(r.Max, r.P50))
			}
		}
	}
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.5, float64(len(groups))-0.5
	p.X.Label.Text = "scenario and shardlease's policy"
	// Whole decades, one spare above the data for the legend.
	p.Y.Min, p.Y.Max = math.Pow10(int(math.Floor(math.Log10(lo)))), math.Pow10(int(math.Ceil(math.Log10(hi)))+1)
	p.Legend.Top, p.Legend.Left = true, true
	const spread = 0.22 // x offset between the systems of a group
	for k, sys := range plotSystems {
		var p50s, tips plotter.XYs
		var whiskers whiskerXYs
		for i, g := range groups {
			r, ok := g.rows[sys.name]
			if !ok || !(r.P50 > 0) || math.IsNaN(r.Max) {
				continue
			}
			x := float64(i) + float64(k-1)*spread
			p50s = append(p50s, plotter.XY{X: x, Y: r.P50})
			tips = append(tips, plotter.XY{X: x, Y: math.Max(r.P99, r.P50)})
			whiskers = append(whiskers, whisker{x: x, low: r.P50, high: math.Max(r.Max, r.P50)})
		}
		if len(p50s) == 0 {
			continue
		}
		dots, err := plotter.NewScatter(p50s)
		if err != nil {
			return err
		}
		dots.GlyphStyle = draw.GlyphStyle{Color: sys.color, Radius: vg.Points(4), Shape: draw.CircleGlyph{}}
		bars, err := plotter.NewScatter(tips)
		if err != nil {
			return err
		}
		bars.GlyphStyle = draw.GlyphStyle{Color: sys.color, Radius: vg.Points(5), Shape: barGlyph{}}
		lines, err := plotter.NewYErrorBars(whiskers)
		if err != nil {
			return err
		}
		lines.LineStyle.Color, lines.LineStyle.Width = sys.color, vg.Points(1.2)
		p.Add(lines, dots, bars)
		p.Legend.Add(sys.name, dots)
	}
	width := vg.Length(math.Max(6, 1.6*float64(len(groups)))) * vg.Inch
	return p.Save(width, 4*vg.Inch, path)
}

// whisker is a vertical line from low to high at x.
type whisker struct{ x, low, high float64 }

// whiskerXYs are whiskers as plotter.YErrorBars takes them: a point at
// low and an error of 0 below and high−low above.
type whiskerXYs []whisker

func (w whiskerXYs) Len() int                        { return len(w) }
func (w whiskerXYs) XY(i int) (float64, float64)     { return w[i].x, w[i].low }
func (w whiskerXYs) YError(i int) (float64, float64) { return 0, w[i].high - w[i].low }

// barGlyph is a short horizontal bar, the p99 mark.
type barGlyph struct{}

func (barGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.StrokeLine2(draw.LineStyle{Color: sty.Color, Width: vg.Points(2)}, pt.X-sty.Radius, pt.Y, pt.X+sty.Radius, pt.Y)
}

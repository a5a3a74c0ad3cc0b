package main

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/shardlease/shardlease/internal/fleetview"
	"github.com/shardlease/shardlease/rebalance"
)

func toleranceFlag(fs *flag.FlagSet) *float64 {
	return fs.Float64("imbalance-tolerance", 0, fmt.Sprintf("a what-if: judge each worker's load against this band instead of the fleet's "+
		"(0: the fleet's stored balance policy's, or the default %.2f; 'shardctl balance' changes the fleet's)", rebalance.DefaultTolerance))
}

// loadLine is the fleet's load in one line, or "" when its members carry
// none (a fleet balancing counts).
func loadLine(f fleetview.Fleet) string {
	l := f.Load
	if l == nil {
		return ""
	}
	band := "in the band"
	if !l.InBand {
		band = "OUT of the band"
	}
	return fmt.Sprintf("load: mean %s per unit of capacity · workers at %.2f–%.2f of their share · band ±%.0f %% (%s) · %d of %d owned shards measured",
		num(l.Mean), l.MinRatio, l.MaxRatio, 100*l.Tolerance, band, l.Measured, f.Summary.Owned)
}

// loadCells are a worker's LOAD and LOAD/SHARE cells: its load and its
// load per unit of capacity over the fleet's mean, marked when outside
// the band.
func loadCells(f fleetview.Fleet, w fleetview.Worker) string {
	if w.Load == nil {
		return "-\t-\t"
	}
	ratio := "-"
	if r := w.LoadRatio; r != nil {
		ratio = fmt.Sprintf("%.2f", *r)
		switch {
		case *r > 1+f.Load.Tolerance:
			ratio += " high"
		case *r < 1-f.Load.Tolerance:
			ratio += " low"
		}
	}
	return num(*w.Load) + "\t" + ratio + "\t"
}

// shardLoadCell is a shard's LOAD cell.
func shardLoadCell(s fleetview.Shard) string {
	if s.Load == nil {
		return "-\t"
	}
	return num(*s.Load) + "\t"
}

// num prints a load with three significant digits, as workers carry it.
func num(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }

package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/rebalance"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// loadFlags are the member flags of load balancing (docs/operations.md,
// "Balancing load"). --load-balance and --imbalance-tolerance are this
// member's proposal for the fleet's balance policy, stored when the fleet
// stores none; shardctl balance changes the stored one. --shard-weights
// is per process: give every member the same.
type loadFlags struct {
	on        bool                 // --load-balance
	tolerance float64              // --imbalance-tolerance; 0: the library's default
	weights   map[shard.ID]float64 // --shard-weights; missing shards weigh 1
	every     time.Duration        // --load-report-every; 0: the library's default
}

func (f *loadFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "load-balance", false, "balance load (reported by handlers, or their commit rate, times --shard-weights) against each member's --weight, "+
		"instead of shard counts: proposed as the fleet's balance policy when it stores none (shardctl balance shows and changes the fleet's)")
	fs.Float64Var(&f.tolerance, "imbalance-tolerance", 0, fmt.Sprintf("with --load-balance, the band around the mean load per unit of capacity every member is kept in, "+
		"as a fraction (default 0: %.2f, ±%.0f %%)", rebalance.DefaultTolerance, 100*rebalance.DefaultTolerance))
	fs.Func("shard-weights", "with --load-balance, static shard weights as SHARD=WEIGHT,… (e.g. stream/shard-003=4,stream/shard-009=0.5); "+
		"a shard not listed weighs 1; give every member the same", f.parseWeights)
	fs.DurationVar(&f.every, "load-report-every", 0, "how often this member carries its shards' smoothed loads to the assignor, when they changed by more than 5 % of its total "+
		"(default 0: "+worker.DefaultLoadReportEvery.String()+" while the fleet balances load, never otherwise; at least "+worker.MinLoadReportEvery.String()+"; negative: never)")
}

// parseWeights reads --shard-weights. A shard named twice, a weight that
// is not a finite number ≥ 0 or an entry without '=' is refused, naming
// the entry; whether the shards exist is checked with the fleet
// (problems).
func (f *loadFlags) parseWeights(s string) error {
	if f.weights == nil {
		f.weights = map[shard.ID]float64{}
	}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		id, v, ok := strings.Cut(entry, "=")
		if !ok || strings.TrimSpace(id) == "" {
			return fmt.Errorf("entry %q is not SHARD=WEIGHT", entry)
		}
		w, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || w < 0 || math.IsInf(w, 0) || math.IsNaN(w) {
			return fmt.Errorf("weight %q of shard %q is not a finite number ≥ 0", v, id)
		}
		sid := shard.ID(strings.TrimSpace(id))
		if _, dup := f.weights[sid]; dup {
			return fmt.Errorf("shard %q is given a weight twice", sid)
		}
		f.weights[sid] = w
	}
	return nil
}

// problems names the weighted shards that are not in fleet, and the load
// flags given without --load-balance that would do nothing.
func (f loadFlags) problems(fleet shard.Config) []error {
	var errs []error
	if len(f.weights) > 0 && fleet.Validate() == nil {
		known := map[shard.ID]bool{}
		for _, id := range fleet.IDs() {
			known[id] = true
		}
		for id := range f.weights {
			if !known[id] {
				errs = append(errs, fmt.Errorf("--shard-weights names shard %q, which is not one of the fleet's %d (%s-000 …)", id, fleet.Shards, fleet.Normalize().Name))
			}
		}
	}
	if !f.on && (f.tolerance != 0 || len(f.weights) > 0) {
		errs = append(errs, fmt.Errorf("--imbalance-tolerance and --shard-weights need --load-balance"))
	}
	return errs
}

// apply sets the load-balancing fields of c.
func (f loadFlags) apply(c *worker.Config) {
	c.LoadReportEvery = f.every
	if !f.on {
		return
	}
	c.LoadBalance = &shard.LoadBalance{Tolerance: f.tolerance}
	if len(f.weights) > 0 {
		weights := f.weights
		c.ShardWeight = func(id shard.ID) float64 {
			if w, ok := weights[id]; ok {
				return w
			}
			return 1
		}
	}
}

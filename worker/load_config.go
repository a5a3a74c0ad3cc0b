package worker

import (
	"fmt"
	"math"
	"strings"
)

// maxWeightProblems bounds how many bad shard weights Validate names, so
// a ShardWeight wrong for every shard of a large fleet gives one readable
// error.
const maxWeightProblems = 3

// loadProblems is settingsProblems' part for load balancing; c has its
// defaults.
func (c Config) loadProblems() []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if c.LoadReportEvery > 0 && c.LoadReportEvery < MinLoadReportEvery {
		add("load report interval %v is shorter than %v: every write wakes the assignor (negative means none, zero the default %v)",
			c.LoadReportEvery, MinLoadReportEvery, DefaultLoadReportEvery)
	}
	if c.LoadHalfLife < 0 {
		add("load half-life %v must not be negative (zero means the default, %v)", c.LoadHalfLife, DefaultLoadHalfLife)
	}
	if lb := c.LoadBalance; lb != nil {
		if !(lb.Tolerance >= 0) || math.IsInf(lb.Tolerance, 0) {
			add("load balance tolerance %v must be a finite fraction ≥ 0 (0.10: ±10 %%; zero means the default)", lb.Tolerance)
		}
		if !(lb.MinGain >= 0) || math.IsInf(lb.MinGain, 0) {
			add("load balance minimum gain %v must be a finite fraction ≥ 0 (zero means the default)", lb.MinGain)
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"tolerance", lb.Tolerance}, {"minimum gain", lb.MinGain}} {
			if f.v >= 1 && !math.IsInf(f.v, 0) {
				add("load balance %s %v must be below 1 (a fraction of the mean load: 0.10 is ±10 %%)", f.name, f.v)
			}
		}
		if lb.MinResidence < 0 {
			add("load balance minimum residence %v must not be negative (zero means the default)", lb.MinResidence)
		}
		if lb.Patience < 0 {
			add("load balance patience %v must not be negative (zero means the default)", lb.Patience)
		}
	}
	if c.ShardWeight != nil && c.Fleet.Validate() == nil {
		var bad []string
		n := 0
		for _, id := range c.Fleet.IDs() {
			if v := c.ShardWeight(id); !(v >= 0) || math.IsInf(v, 0) {
				n++
				if len(bad) < maxWeightProblems {
					bad = append(bad, fmt.Sprintf("%s: %v", id, v))
				}
			}
		}
		if n > 0 {
			add("shard weight must be a finite number ≥ 0 for every shard; %d are not (%s)", n, strings.Join(bad, ", "))
		}
	}
	return problems
}

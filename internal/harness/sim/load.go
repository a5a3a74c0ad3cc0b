package sim

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// loadShare is the share of seeds whose fleet balances load, with handlers
// that report loads changing over the run.
const loadShare = 1.0 / 3

// LoadSetup is a seed's load balancing: off for most seeds (count
// balance), or on with these loads. It is drawn from a stream of its own,
// so every fault of every seed stays where it was before loads existed.
type LoadSetup struct {
	On bool
	// Tolerance, Residence and Patience are the assignor's
	// shard.LoadBalance; ReportEvery and HalfLife the workers'
	// worker.Config.LoadReportEvery and LoadHalfLife. They are short so
	// that a run of a minute or two sees several waves of load moves.
	Tolerance   float64
	Residence   time.Duration
	Patience    time.Duration
	ReportEvery time.Duration
	HalfLife    time.Duration
	// Base is each shard's load before noise: Zipf-like (1/(rank)^S over
	// a shuffled rank) or flat (S 0).
	Base []float64
	S    float64
	// Every NoiseEvery each shard's load is its base times a factor in
	// 1 ± Noise, a new one each time; Hot's load is tripled from HotAt.
	// Loads stop changing at Freeze (the end of the faults), so the fleet
	// can settle.
	NoiseEvery time.Duration
	Noise      float64
	Hot        int
	HotAt      time.Duration
	Freeze     time.Duration
}

func (l LoadSetup) String() string {
	if !l.On {
		return "count balance"
	}
	return fmt.Sprintf("load balance ±%.0f %% (residence %v, patience %v, reports every %v, half-life %v), loads zipf s=%.1f ±%.0f %% every %v, shard %d tripled at %v, frozen at %v",
		100*l.Tolerance, l.Residence, l.Patience, l.ReportEvery, l.HalfLife, l.S, 100*l.Noise, l.NoiseEvery, l.Hot, l.HotAt, l.Freeze)
}

// newLoadSetup draws a seed's load setup for a schedule whose faults end
// at faultsEnd.
func newLoadSetup(seed uint64, shards int, faultsEnd time.Duration) LoadSetup {
	rng := rand.New(rand.NewPCG(seed, seed^0x10ad10ad10ad10ad))
	if rng.Float64() >= loadShare {
		return LoadSetup{}
	}
	l := LoadSetup{On: true,
		Tolerance:   []float64{0.2, 0.3, 0.5}[rng.IntN(3)],
		Residence:   time.Duration(2+rng.IntN(6)) * time.Second,
		Patience:    time.Duration(1+rng.IntN(3)) * time.Second,
		ReportEvery: time.Second * time.Duration(1+rng.IntN(2)),
		HalfLife:    time.Duration(500+rng.IntN(1500)) * time.Millisecond,
		S:           []float64{0, 0.5, 1.1}[rng.IntN(3)],
		NoiseEvery:  time.Duration(2+rng.IntN(9)) * time.Second,
		Noise:       []float64{0, 0.2, 0.5}[rng.IntN(3)],
		Hot:         rng.IntN(shards),
		HotAt:       time.Duration(rng.Int64N(int64(faultsEnd) + 1)).Round(time.Millisecond),
		Freeze:      faultsEnd,
	}
	rank := rng.Perm(shards)
	l.Base = make([]float64, shards)
	for i := range shards {
		l.Base[i] = 100 / math.Pow(float64(rank[i]+1), l.S)
	}
	return l
}

// at is shard i's true load at t (since the start). A shard of a
// reshard's layout, whose index may be past the first layout's, has the
// load of index i modulo the first layout's count.
func (l LoadSetup) at(seed uint64, i int, t time.Duration) float64 {
	t = min(t, l.Freeze)
	i %= len(l.Base)
	v := l.Base[i]
	if l.Noise > 0 {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%d/%d", seed, i, t/l.NoiseEvery)
		v *= 1 - l.Noise + 2*l.Noise*float64(h.Sum64()%10007)/10006
	}
	if i == l.Hot && t >= l.HotAt {
		v *= 3
	}
	return v
}

// policy is the assignor's load policy, nil for count balance.
func (l LoadSetup) policy() *shard.LoadBalance {
	if !l.On {
		return nil
	}
	return &shard.LoadBalance{Tolerance: l.Tolerance, MinResidence: l.Residence, Patience: l.Patience}
}

// settleBound is how much longer than Bound a load-balancing fleet may
// take to settle once the loads froze: the smoothing (ten half-lives),
// two reports, and waves of load moves each waiting out the patience and
// the residence of the last.
func (l LoadSetup) settleBound(su Setup) time.Duration {
	if !l.On {
		return 0
	}
	return 10*l.HalfLife + 2*l.ReportEvery + time.Duration(su.Shards/2+2)*(l.Patience+l.Residence+su.DrainTimeout+time.Second)
}

// shardIndex is the number at the end of a shard's ID.
func shardIndex(id shard.ID) int {
	s := string(id)
	n, _ := strconv.Atoi(s[strings.LastIndexByte(s, '-')+1:])
	return n
}

// reportLoad is one step's report of a simulated handler: the shard's true
// load now, or, one step in fifty, a bad value the worker must ignore.
func (r *run) reportLoad(rng *rand.Rand, c interface{ ReportLoad(float64) }, id shard.ID) {
	l := r.sched.Setup.Load
	if !l.On {
		return
	}
	if rng.IntN(50) == 0 {
		c.ReportLoad([]float64{math.NaN(), -1, math.Inf(1)}[rng.IntN(3)])
		return
	}
	c.ReportLoad(l.at(r.sched.Seed, shardIndex(id), r.c.elapsed()))
}

// viewError is how far the fleet's view of a worker's load (the figures
// in its member record, which the assignor balances) may stay from the
// worker's true load once the loads hold still and the smoothing has
// caught up: a worker writes a drift of its total only above loadSettle
// (1 %, worker/load_report.go), each shard's figure is rounded to three
// significant digits (at most 0.5 %, worker.roundLoad), and a tenth of a
// percent is left for what the smoothing has still to cover.
const viewError = 0.01 + 0.005 + 0.001

// viewLag says which running worker's load, as the fleet sees it, is
// still further than viewError from its true load, or "": the workers'
// reports have caught up with the frozen loads.
func (r *run) viewLag(snap shard.Snapshot) string {
	truth, view := r.memberLoads(snap)
	for _, m := range r.running() {
		t, v := truth[m.ID], view[m.ID]
		if math.Abs(v-t) > viewError*t {
			return fmt.Sprintf("the fleet sees %s's load as %.4g, its true load is %.4g (more than %.1f %% off: reports still catching up)",
				m.ID, v, t, 100*viewError)
		}
	}
	return ""
}

// memberLoads sums, per running worker, the true frozen loads of the
// shards it holds in snap, and their figures as its member record shows
// them (a shard without a figure adds nothing: carried reports it).
func (r *run) memberLoads(snap shard.Snapshot) (truth, view map[string]float64) {
	l := r.sched.Setup.Load
	truth, view = map[string]float64{}, map[string]float64{}
	records := map[string]shard.MemberState{}
	for _, m := range r.running() {
		truth[m.ID], view[m.ID] = 0, 0
		if ms, ok := snap.Member(m.ID); ok {
			records[m.ID] = ms
		}
	}
	for id, w := range snap.Owners() {
		if _, ok := truth[w]; !ok {
			continue
		}
		truth[w] += l.at(r.sched.Seed, shardIndex(id), l.Freeze)
		view[w] += records[w].Load[id]
	}
	return truth, view
}

// loadBand says, for a load-balancing fleet settled on frozen loads, why
// the band does not hold when it is reachable, or "". Reachable here is
// a sufficient condition: every shard at most half the band's width of
// one running worker's mean load (so a single move can always land a
// worker inside it), with equal weights.
//
// The assignor keeps the band on the fleet's view of the loads, which
// settling waited to come within viewError of each worker's true load
// (viewLag). So the true ratios are judged against the band widened by
// what that error can do to a ratio: the worker's figure and the mean
// each off by up to viewError, in opposite directions. A worker the
// assignor sees at 1.299 × the mean of a ±30 % band may truly be at
// 1.301 (seed 197), and one seen at 0.502 of a ±50 % band at 0.497 (seed
// 416): inside the promise, which is the band on the view.
func (r *run) loadBand(snap shard.Snapshot) string {
	l := r.sched.Setup.Load
	running := r.running()
	if !l.On || len(running) < 2 {
		return ""
	}
	per, view := r.memberLoads(snap)
	total, heaviest := 0.0, 0.0
	for id := range snap.Owners() {
		v := l.at(r.sched.Seed, shardIndex(id), l.Freeze)
		total += v
		heaviest = max(heaviest, v)
	}
	mean := total / float64(len(running))
	if heaviest > l.Tolerance*mean {
		return "" // not surely reachable by single moves
	}
	r.loadRes.BandChecked = true
	widen := (1 + viewError) / (1 - viewError)
	hi, lo := (1+l.Tolerance)*widen, (1-l.Tolerance)/widen
	for w, v := range per {
		if r := v / mean; r > hi || r < lo {
			return fmt.Sprintf("worker %s carries %.3g, %.3f× the mean %.3g, outside ±%.0f %% (%.3f–%.3f× with the view's error) though every shard is at most %.3g (loads per worker %v; as the fleet sees them %v)",
				w, v, r, mean, 100*l.Tolerance, lo, hi, heaviest, per, view)
		}
	}
	return ""
}

// LoadResult is what settling a load-balancing seed found.
type LoadResult struct {
	On bool
	// Resettles counts the times the settled fleet moved shards again
	// (load moves) before it stayed put.
	Resettles int
	// BandChecked is set when the band was surely reachable and checked.
	BandChecked bool
}

// settleLoad is settle for a load-balancing fleet: counts need not be
// even, but no move may be pending, and once settled the fleet must stay
// put for longer than a patience plus a residence; a fleet still moving
// shards on frozen loads at the bound is oscillating. Settled, the band
// must hold where it is surely reachable (loadBand).
func (r *run) settleLoad(from, bound time.Duration) time.Duration {
	l := r.sched.Setup.Load
	quiet := max(stableFor, l.Patience+l.Residence+2*l.ReportEvery+time.Second)
	moved := 0
	r.loadRes.On = true
	defer func() { r.loadRes.Resettles = moved }()
	for {
		for {
			why := r.unsettled()
			if why == "" {
				break
			}
			if r.c.elapsed()-from > bound {
				r.c.violate("the load-balancing fleet has not settled %v after the last fault (bound %v, %d re-settles after load moves): %s\n%s",
					r.c.elapsed()-from, bound, moved, why, r.diagnose())
				return r.c.elapsed() - from
			}
			if !r.advanceTo(r.c.elapsed() + checkEvery) {
				return r.c.elapsed() - from
			}
		}
		took := r.c.elapsed() - from
		before := r.snapshot()
		if !r.advanceTo(r.c.elapsed() + quiet) {
			return took
		}
		snap := r.snapshot()
		why := r.unsettled()
		if why == "" && fmt.Sprint(snap.Owners()) == fmt.Sprint(before.Owners()) {
			if snap.Assignor.Token != before.Assignor.Token {
				r.c.violate("the fleet settled %v after the last fault, then elected another assignor: epoch %d (%s), then %d (%s)",
					took, before.Assignor.Token, before.Assignor.Worker, snap.Assignor.Token, snap.Assignor.Worker)
			} else if band := r.loadBand(snap); band != "" {
				r.c.violate("the load-balancing fleet settled %v after the last fault outside its band: %s", took, band)
			} else if why := carried(snap); why != "" {
				r.c.violate("the load-balancing fleet settled %v after the last fault, but %s", took, why)
			}
			return took
		}
		moved++
		if r.c.elapsed()-from > bound {
			r.c.violate("the load-balancing fleet kept moving shards on frozen loads for %v after the last fault (bound %v, %d re-settles): %v, then %v",
				r.c.elapsed()-from, bound, moved, before.Owners(), snap.Owners())
			return took
		}
	}
}

// pendingMoves says which running worker's assignment key differs from
// what it owns, or "".
func (r *run) pendingMoves(snap shard.Snapshot) string {
	owners := snap.Owners()
	for _, m := range r.running() {
		want := map[shard.ID]bool{}
		for _, id := range snap.Assignments[m.ID].Shards {
			want[id] = true
		}
		n := 0
		for id, w := range owners {
			if w != m.ID {
				continue
			}
			n++
			if !want[id] {
				return fmt.Sprintf("%s owns %s, which its assignment no longer lists (a hand-off in flight)", m.ID, id)
			}
		}
		if n != len(want) {
			return fmt.Sprintf("%s owns %d shards, its assignment lists %d", m.ID, n, len(want))
		}
	}
	return ""
}

// carried says which live member's record lacks a load figure for a
// shard it holds, or "": once settled, every holder has measured and
// written each of its shards.
func carried(snap shard.Snapshot) string {
	live := map[shard.SessionID]shard.MemberState{}
	for _, m := range snap.Members {
		if m.Live() {
			live[m.Session] = m
		}
	}
	for _, st := range snap.Shards {
		if m, ok := live[st.Session]; ok && st.Held() {
			if _, ok := m.Load[st.Shard]; !ok {
				return fmt.Sprintf("%s's member record carries no load for %s, which it holds (it carries %v)", m.ID, st.Shard, m.Load)
			}
		}
	}
	return ""
}

package coordinatorload

import (
	"context"
	"fmt"
	"time"

	"github.com/shardlease/shardlease/internal/bench"
	"github.com/shardlease/shardlease/internal/bench/steady"
)

// assignorLoad collects, over coordinator-load's windows, the requests per
// second of the worker that is the assignor (it alone lists the fleet) and
// the rate per worker of the others. A window during which the assignor
// changed, or that had none, is left out of both.
type assignorLoad struct {
	own, others []float64
	skipped     int
	worker      string // the assignor of the last window counted
}

// window counts one steady.Fleet.Window and each worker's own rate over it,
// and keeps the assignor's figures. It returns the window's rate per
// worker and per endpoint, as window does.
func (a *assignorLoad) window(ctx context.Context, f *steady.Fleet, d time.Duration) (perWorker float64, byEndpoint map[string]float64, err error) {
	before, err := f.Assignor(ctx)
	if err != nil {
		return 0, nil, err
	}
	counts := f.Totals()
	perWorker, byEndpoint, seconds, err := f.Window(ctx, d)
	if err != nil {
		return 0, nil, err
	}
	after := f.Totals()
	now, err := f.Assignor(ctx)
	if err != nil {
		return 0, nil, err
	}
	if before < 0 || now != before {
		a.skipped++
		return perWorker, byEndpoint, nil
	}
	var rest float64
	for i := range after {
		if i != now {
			rest += float64(after[i] - counts[i])
		}
	}
	a.own = append(a.own, float64(after[now]-counts[now])/seconds)
	a.others = append(a.others, rest/float64(max(len(after)-1, 1))/seconds)
	a.worker = steady.WorkerName(now)
	return perWorker, byEndpoint, nil
}

// last describes the last window counted, for a progress line.
func (a *assignorLoad) last() string {
	if len(a.own) == 0 {
		return fmt.Sprintf("no window with one assignor throughout (%d skipped)", a.skipped)
	}
	return fmt.Sprintf("the assignor %s %.3f, the others %.3f per worker", a.worker, a.own[len(a.own)-1], a.others[len(a.others)-1])
}

// row is the assignor's own row: p50/p99 of its worker's rate, with the
// others' rate per worker beside it.
func (a *assignorLoad) row(workers, shards, trials int) bench.Result {
	row := bench.Measured(Name, bench.SystemShardlease,
		fmt.Sprintf("Consul requests per second of the assignor's worker, %d workers × %d shards", workers, shards), "req/s", a.own).
		With("others_per_worker_p50", bench.Percentile(a.others, 50)).With("others_per_worker_p99", bench.Percentile(a.others, 99)).
		With("shards", float64(shards)).With("workers", float64(workers))
	if a.skipped > 0 {
		row = row.WithNote(fmt.Sprintf("%d of %d windows left out: the assignor changed during them", a.skipped, trials))
	}
	return row
}

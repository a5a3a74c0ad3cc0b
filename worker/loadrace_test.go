package worker_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// cordonMidReport is a worker's coordinator that, once armed, has an
// operator cordon the worker in the middle of its next load report: after
// the worker's fresh read of its member key (Members.Watch from 0, which a
// report that copies the operator's marks before rewriting the key makes
// first) or, if the report reads nothing, just before its loads are
// written (ReportLoad). Either way the cordon lands between whatever the
// report read and what it writes.
type cordonMidReport struct {
	op    *memoryOperator
	armed atomic.Bool

	mu    sync.Mutex
	fired int
	err   error
}

// memoryOperator cordons a worker as admin's editMember does: the member
// key as a snapshot shows it, with a cordon, written with the worker's own
// session.
type memoryOperator struct {
	coord  shard.Coordinator
	worker string
}

func (o *memoryOperator) cordon(ctx context.Context) error {
	snap, err := o.coord.Fleet().Watch(ctx, 0)
	if err != nil {
		return err
	}
	ms, _ := snap.Member(o.worker)
	m := ms.Member
	m.Cordon = &shard.Mark{By: "ops", At: time.Now(), Reason: "disk"}
	return o.coord.Members().Join(ctx, ms.Session, m)
}

func (c *cordonMidReport) strike(ctx context.Context) {
	if !c.armed.CompareAndSwap(true, false) {
		return
	}
	err := c.op.cordon(ctx)
	c.mu.Lock()
	c.fired++
	c.err = err
	c.mu.Unlock()
}

func (c *cordonMidReport) intercept(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
	switch call.Op {
	case shard.OpWatchMember:
		err := invoke(ctx)
		if call.After == 0 && err == nil {
			c.strike(ctx)
		}
		return err
	case shard.OpReportLoad:
		c.strike(ctx)
	}
	return invoke(ctx)
}

// TestCordonDuringLoadReportSurvives: an operator's cordon written while
// a load report is in flight is still on the member key afterwards, and
// the worker keeps it. (A report that read the member key, copied its
// marks and wrote it back with the loads lost such a cordon: the worker
// then saw the key without it, as if the operator had lifted it.)
func TestCordonDuringLoadReportSurvives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFleet(t, 4)
		var load atomic.Int64
		load.Store(10)
		cfg := f.config("a", reporting(&load))
		cfg.LoadBalance = &shard.LoadBalance{}
		mid := &cordonMidReport{op: &memoryOperator{coord: f.coord, worker: "a"}}
		f.startWrapped(cfg, func(c shard.Coordinator) shard.Coordinator { return shard.Intercept(c, mid.intercept) })
		settle(30 * time.Second)
		if ms, _ := f.snapshot().Member("a"); len(ms.Load) != 4 || ms.Cordon != nil {
			t.Fatalf("member a after 30 s: loads %v, cordon %+v; want 4 shards' loads and no cordon", ms.Load, ms.Cordon)
		}

		mid.armed.Store(true)
		load.Store(40) // the next report has something to write
		settle(30 * time.Second)
		mid.mu.Lock()
		fired, err := mid.fired, mid.err
		mid.mu.Unlock()
		if fired != 1 || err != nil {
			t.Fatalf("the operator's cordon mid-report: written %d times, error %v; want once, without error", fired, err)
		}
		ms, _ := f.snapshot().Member("a")
		if ms.Cordon == nil || ms.Cordon.By != "ops" {
			t.Fatalf("cordon on member a after a load report it landed in: %+v, want the operator's (by ops) kept", ms.Cordon)
		}
		if v := ms.Load["stream/shard-000"]; v < 20 {
			t.Fatalf("stream/shard-000's load after the report: %v (loads %v), want the report written (the load rose from 10 to 40)", v, ms.Load)
		}
	})
}

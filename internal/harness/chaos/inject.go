package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/consul/api"
)

// inject runs one fault, from injection to heal. A SIGSTOP fault's Start
// is read just before the signal and its End just after the SIGCONT: the
// window in which the victim ran nothing (Pauses).
//
// An assignor fault's victim held P/assignor at p.holder, read just
// before; the fault's Detail says so.
//
// A destroy's victim may be between sessions; its session is found first
// (findSessions waits for it), and the fault starts after, so that the
// wait counts in no takeover.
func (f *Fleet) inject(ctx context.Context, p pick, tm Timing) Fault {
	var ft Fault
	for _, v := range p.victims {
		ft.Victims = append(ft.Victims, v.ID)
	}
	err := p.err
	if err == nil && (p.kind == Destroy || p.kind == PartitionDestroy) {
		p.sessions, err = f.findSessions(ctx, p.worker.ID)
	}
	ft.Kind, ft.Start, ft.Assignor = p.kind, time.Now(), p.holder
	if err != nil {
		if p.worker != nil {
			ft.Target = p.worker.ID
		}
		ft.End, ft.Err = ft.Start, err.Error()
		return ft
	}
	if p.agent != nil {
		ft.Target = p.agent.Name
		ft.Detail, err = f.injectAgent(ctx, p, tm)
	} else {
		ft.Target = p.worker.ID
		ft.Detail, err = f.injectWorker(ctx, p, tm)
		if p.kind.assignor() {
			ft.Detail = "the assignor: P/assignor held by " + p.holder.String()
		}
	}
	ft.End = time.Now()
	if err != nil {
		ft.Err = err.Error()
	}
	return ft
}

// injectWorker runs a fault of WorkerKinds or AssignorKinds on p.worker.
func (f *Fleet) injectWorker(ctx context.Context, p pick, tm Timing) (string, error) {
	w := p.worker
	past := tm.TTL + time.Second // past the TTL: the session is lost
	switch p.kind {
	case SigStop, AssignorStop:
		w.signal(syscall.SIGSTOP)
		sleepCtx(ctx, tm.TTL+tm.LockDelay+2*time.Second)
		w.signal(syscall.SIGCONT)
	case Kill9, AssignorKill9:
		if err := w.kill9(); err != nil {
			return "", err
		}
		sleepCtx(ctx, time.Second+p.jitter)
		return "", w.start()
	case Partition:
		w.Proxy.Set(ModePartition, 0)
		sleepCtx(ctx, past)
		w.Proxy.Set(ModePass, 0)
	case SlowRenew:
		// Between a quarter of the TTL (renewals late, the session kept)
		// and three quarters (beyond the pause budget: the worker steps
		// down), for two TTLs.
		delay := tm.TTL/4 + time.Duration(float64(tm.TTL/2)*float64(p.jitter)/float64(2*time.Second))
		w.Proxy.Set(ModeSlowRenewals, delay)
		sleepCtx(ctx, 2*tm.TTL)
		w.Proxy.Set(ModePass, 0)
		return delay.Round(time.Millisecond).String(), nil
	case FailRenew:
		w.Proxy.Set(ModeFailRenewals, 0)
		sleepCtx(ctx, past)
		w.Proxy.Set(ModePass, 0)
	case Destroy:
		n, err := p.sessions.destroy(ctx)
		sleepCtx(ctx, past)
		return fmt.Sprintf("%d session(s) destroyed", n), err
	case PartitionDestroy:
		// The session was found before the cut (inject: a worker between
		// sessions gets time to create its next one), and is destroyed
		// 100–600 ms after it: anywhere in a renewal period, so sometimes
		// just after the last renewal that got through, where the
		// lock-delay rule has least to spare.
		w.Proxy.Set(ModePartition, 0)
		after := 100*time.Millisecond + p.jitter/4
		sleepCtx(ctx, after)
		n, err := p.sessions.destroy(ctx)
		sleepCtx(ctx, past-after)
		w.Proxy.Set(ModePass, 0)
		return fmt.Sprintf("%d session(s) destroyed %v after the cut", n, after.Round(time.Millisecond)), err
	default:
		return "", fmt.Errorf("chaos: no worker fault %q", p.kind)
	}
	return "", nil
}

// injectAgent runs a fault of AgentKinds on p.agent, and brings the agent
// back: running, its node in the cluster again.
func (f *Fleet) injectAgent(ctx context.Context, p pick, tm Timing) (string, error) {
	a := p.agent
	past := tm.TTL + time.Second
	start := time.Now()
	switch p.kind {
	case AgentKill:
		a.Stop() // SIGKILL, and waits for the exit
		sleepCtx(ctx, past)
	case AgentStop:
		if err := a.Signal(syscall.SIGSTOP); err != nil {
			return "", err
		}
		sleepCtx(ctx, past)
		if err := a.Signal(syscall.SIGCONT); err != nil {
			return "", err
		}
		back := time.Now()
		if err := a.AwaitReady(30 * time.Second); err != nil {
			return "", err
		}
		return fmt.Sprintf("node healthy %v after SIGCONT", time.Since(back).Round(time.Millisecond)), nil
	case AgentLeave:
		if err := a.Leave(); err != nil {
			return "", err
		}
		sleepCtx(ctx, past-time.Since(start))
	case ZoneKill:
		return killZone(ctx, a.Workers, time.Second+p.jitter)
	default:
		return "", fmt.Errorf("chaos: no agent fault %q", p.kind)
	}
	back := time.Now()
	if err := a.Relaunch(time.Minute); err != nil {
		return "", err
	}
	return fmt.Sprintf("restarted, ready in %v", time.Since(back).Round(time.Millisecond)), nil
}

// killZone SIGKILLs every worker of a zone at once, waits down, and
// starts them again under their IDs.
func killZone(ctx context.Context, ws []*Worker, down time.Duration) (string, error) {
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() { errs[i] = w.kill9() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	sleepCtx(ctx, down)
	for _, w := range ws {
		if err := w.start(); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%d workers killed, back after %v", len(ws), down.Round(time.Millisecond)), nil
}

// sessionsOf are a worker's sessions as a third party found them, and how
// to end them.
type sessionsOf struct {
	worker string
	end    func(ctx context.Context) (int, error)
}

// destroy ends the sessions found, and reports how many.
func (s sessionsOf) destroy(ctx context.Context) (int, error) { return s.end(ctx) }

// findSessionWait is how long findSessions waits for a worker that is
// between sessions (stepped down and rejoining, restarting after a fault)
// to create its next one.
const findSessionWait = 20 * time.Second

// findSessions finds every session named after worker, through a running
// server, as an operator (or any third party) would.
func (f *Fleet) findSessions(ctx context.Context, worker string) (sessionsOf, error) {
	if f.cfg.Etcd != nil {
		return f.findLeases(ctx, worker)
	}
	servers := f.cfg.Cluster.Running()
	if len(servers) == 0 {
		return sessionsOf{}, errors.New("chaos: no Consul server running to destroy a session through")
	}
	srv := servers[rand.IntN(len(servers))]
	c, err := api.NewClient(srv.Config())
	if err != nil {
		return sessionsOf{}, fmt.Errorf("chaos: client for %s: %w", srv.Name, err)
	}
	var ids []string
	deadline := time.Now().Add(findSessionWait)
	for {
		list, _, err := c.Session().List((&api.QueryOptions{}).WithContext(ctx))
		if err != nil {
			return sessionsOf{}, fmt.Errorf("chaos: listing sessions on %s: %w", srv.Name, err)
		}
		for _, e := range list {
			if e.Name == worker {
				ids = append(ids, e.ID)
			}
		}
		if len(ids) > 0 {
			return sessionsOf{worker: worker, end: func(ctx context.Context) (int, error) {
				for n, id := range ids {
					if _, err := c.Session().Destroy(id, (&api.WriteOptions{}).WithContext(ctx)); err != nil {
						return n, fmt.Errorf("chaos: destroying session %s of %s on %s: %w", id, worker, srv.Name, err)
					}
				}
				return len(ids), nil
			}}, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return sessionsOf{}, fmt.Errorf("chaos: no session named %s on %s within %v", worker, srv.Name, findSessionWait)
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

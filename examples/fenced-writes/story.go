package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/shardlease/shardlease/examples/internal/engine"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
	"go.uber.org/zap"
)

// The values each write carries.
const (
	valueA1   = "leader-a-started"
	valueB    = "leader-b-committed"
	valueLate = "leader-a-resumed"
)

// options choose the coordinator and the timings.
type options struct {
	engine *engine.Choice // nil: the embedded coordinator
	policy shard.LeasePolicy
}

// embeddedOptions: a short lease so the story plays out in seconds.
func embeddedOptions() options {
	return options{policy: shard.LeasePolicy{TTL: 2 * time.Second, RenewEvery: 400 * time.Millisecond, PauseBudget: time.Second,
		LockDelay: time.Second}}
}

// sharedOptions: a coordinator each for A and B, on Consul or etcd, as two
// processes would have. Consul's fast-failover liveness (a TTL health
// check per session) accepts a 3 s TTL, and an etcd lease is whole
// seconds.
func sharedOptions(c *engine.Choice) options {
	return options{engine: c, policy: shard.LeasePolicy{TTL: 3 * time.Second, RenewEvery: 500 * time.Millisecond, PauseBudget: time.Second,
		LockDelay: 2 * time.Second}}
}

// outcome is what the story must end with.
type outcome struct {
	tokenA, tokenB            shard.Token
	firstA, writeB, lateA     bool // accepted?
	final                     string
	finalToken                shard.Token
	takeover                  time.Duration // from A's pause to B's acquisition
	takeoverReason, coordName string
}

func (o outcome) ok() bool {
	return o.firstA && o.writeB && !o.lateA && o.tokenB > o.tokenA && o.final == valueB && o.finalToken == o.tokenB
}

// transcript prints one line per step, whoever's goroutine it comes from.
type transcript struct {
	mu sync.Mutex
	w  io.Writer
}

func (t *transcript) say(who, format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if who == "" {
		fmt.Fprintf(t.w, format+"\n", args...)
		return
	}
	fmt.Fprintf(t.w, "%-2s %s\n", who, fmt.Sprintf(format, args...))
}

// step is what a worker's handler reports to the story.
type step struct {
	token    shard.Token
	accepted bool
	outcome  string
}

// run plays the story once and prints its transcript to out.
func run(ctx context.Context, o options, out io.Writer) (res outcome, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := &transcript{w: out}

	coordA, coordB, cleanup, err := o.coordinators(&res)
	if err != nil {
		return res, err
	}
	defer cleanup()
	p := o.policy
	t.say("", "fenced writes on %s: workers A and B, one lock (%s), one shared register that keeps the highest token", res.coordName, lock)
	t.say("", "lease: TTL %v, renew every %v, pause budget %v; lock-delay %v", p.TTL, p.RenewEvery, p.PauseBudget, p.EffectiveLockDelay())

	reg := &register{}
	// The workers' own offsets store: each new claim is fenced in it before
	// its handler starts. The story's writes go to reg.
	store := offmem.New()
	defer store.Close()
	paused := newPausable(coordA)

	aFirst, aLate, bWrite := make(chan step, 1), make(chan step, 1), make(chan step, 1)
	wake := make(chan struct{}) // closed when A's process resumes
	handlerA := func(ctx context.Context, c *worker.Claim) error {
		ok, what := reg.write(c.Token, valueA1)
		aFirst <- step{c.Token, ok, what}
		// The pause strikes here, with the next write already prepared. A
		// paused process does not see its context end: it simply stops.
		<-wake
		ok, what = reg.write(c.Token, valueLate)
		aLate <- step{c.Token, ok, what}
		<-ctx.Done()
		return nil
	}
	handlerB := func(ctx context.Context, c *worker.Claim) error {
		ok, what := reg.write(c.Token, valueB)
		bWrite <- step{c.Token, ok, what}
		<-ctx.Done()
		return nil
	}

	var running sync.WaitGroup
	defer running.Wait()
	defer cancel()
	start := func(id string, c shard.Coordinator, h worker.HandlerFunc) (*worker.Worker, error) {
		w, err := worker.New(worker.Config{
			ID: id, Fleet: shard.Config{Shards: 1}, Coordinator: c, Offsets: store, Handler: h,
			Policy: o.policy, DrainTimeout: 2 * time.Second,
			LocalOffsets: true,         // every worker of the story runs in this process, on Consul too
			Logger:       zap.NewNop(), // the story tells what happens
		})
		if err != nil {
			return nil, err
		}
		running.Go(func() {
			if err := w.Run(ctx); err != nil {
				t.say(id, "stopped with an error: %v", err)
			}
		})
		return w, nil
	}

	if _, err := start("A", paused, handlerA); err != nil {
		return res, err
	}
	a, err := await(ctx, aFirst)
	if err != nil {
		return res, err
	}
	res.tokenA, res.firstA = a.token, a.accepted
	t.say("A", "acquired %s with token %d", lock, a.token)
	t.say("A", "writes %q with token %d: %s", valueA1, a.token, a.outcome)

	wb, err := start("B", coordB, handlerB)
	if err != nil {
		return res, err
	}
	if err := awaitActive(ctx, wb); err != nil {
		return res, err
	}
	t.say("B", "joined as a standby: A holds the lock")

	paused.pause()
	pausedAt := time.Now()
	t.say("A", "paused (stop-the-world) with its next write prepared; its renewals stop")

	b, err := await(ctx, bWrite)
	if err != nil {
		return res, err
	}
	res.tokenB, res.writeB, res.takeover = b.token, b.accepted, time.Since(pausedAt)
	if s, err := coordB.Fleet().Watch(ctx, 0); err == nil {
		if st, ok := s.Shard(lock); ok {
			res.takeoverReason = st.Owner.Why.String()
		}
	}
	t.say("B", "acquired %s with token %d, %v after A's pause (%s)", lock, b.token, res.takeover.Round(100*time.Millisecond), res.takeoverReason)
	t.say("B", "writes %q with token %d: %s", valueB, b.token, b.outcome)

	close(wake)
	paused.resume()
	late, err := await(ctx, aLate)
	if err != nil {
		return res, err
	}
	res.lateA = late.accepted
	t.say("A", "resumes and sends its delayed write %q with token %d: %s", valueLate, late.token, late.outcome)

	res.final, res.finalToken = reg.read()
	verdict := "B's write stands"
	if !res.ok() {
		verdict = "WRONG: the stale write won"
	}
	t.say("", "final value %q (token %d): %s", res.final, res.finalToken, verdict)
	return res, nil
}

// lock is the one shard of the story's fleet.
var lock = shard.Config{Shards: 1}.IDs()[0]

// coordinators returns A's and B's coordinators: one embedded coordinator
// shared by both, or one of Consul or etcd each, as two processes would
// have. cleanup removes the example's keys.
func (o options) coordinators(res *outcome) (a, b shard.Coordinator, cleanup func(), err error) {
	choice := o.engine
	if choice == nil {
		choice = &engine.Choice{}
	}
	members := choice.Members()
	res.coordName = choice.Name()
	if a, err = members.New(); err == nil {
		b, err = members.New()
	}
	if err != nil {
		members.Close()
		return nil, nil, nil, err
	}
	return a, b, members.Close, nil
}

// await waits for a step or for ctx to end.
func await(ctx context.Context, ch <-chan step) (step, error) {
	select {
	case s := <-ch:
		return s, nil
	case <-ctx.Done():
		return step{}, errors.New("interrupted")
	}
}

// awaitActive waits until w has joined the fleet.
func awaitActive(ctx context.Context, w *worker.Worker) error {
	for w.Status().State != worker.StateActive {
		select {
		case <-ctx.Done():
			return errors.New("interrupted")
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shardlease/shardlease/examples/internal/engine"
	"github.com/shardlease/shardlease/examples/jetstream/pipeline"
	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/internal/inproc"
	"github.com/shardlease/shardlease/internal/pgserver"
	"github.com/shardlease/shardlease/offsets/postgres"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// options set the servers, the fleet, the stream and the faults.
type options struct {
	natsURL, postgresDSN string
	engine               *engine.Choice // nil: the embedded coordinator
	partitions, workers  int
	events               int64         // per partition
	pace                 time.Duration // one round of events (one per partition) per pace
	policy               shard.LeasePolicy
	// The faults, as fractions of the production: the two kills, the
	// pause, the join.
	killAt   [2]float64
	pauseAt  float64
	joinAt   float64
	settle   time.Duration // the most the consumers may take to catch up after the last event
	allLines bool          // print every partition's line (else the problems and the total)
	// The handlers' state: windows of window events per partition, whose
	// open window a cold start rebuilds at replayCost an event; standbys
	// for failover per shard in the fleet's policy.
	window     int64
	replayCost time.Duration
	standbys   int
}

func defaultOptions() options {
	return options{
		partitions: 128, workers: 12, events: 150, pace: 100 * time.Millisecond,
		policy: shard.LeasePolicy{TTL: 2 * time.Second, RenewEvery: 400 * time.Millisecond, PauseBudget: time.Second,
			LockDelay: time.Second},
		killAt: [2]float64{0.1, 0.3}, pauseAt: 0.5, joinAt: 0.8, settle: time.Minute, allLines: true,
		window: 25, replayCost: 80 * time.Millisecond, standbys: 1,
	}
}

func (o *options) useShared(c *engine.Choice) {
	o.engine = c
	o.policy = shard.LeasePolicy{TTL: 3 * time.Second, RenewEvery: 500 * time.Millisecond, PauseBudget: time.Second, LockDelay: 2 * time.Second}
}

func (o options) validate() error {
	var problems []error
	if o.partitions < 1 || o.partitions > 1000 {
		problems = append(problems, fmt.Errorf("--partitions %d: want 1 to 1000 (subjects orders.000 to orders.999)", o.partitions))
	}
	if o.workers < 3 {
		problems = append(problems, fmt.Errorf("--workers %d: want at least 3, since two die and one must pause", o.workers))
	}
	if o.events < 10 {
		problems = append(problems, fmt.Errorf("--events %d: want at least 10 per partition, so the faults fall while events flow", o.events))
	}
	if o.pace <= 0 {
		problems = append(problems, fmt.Errorf("--pace %v: want a positive duration", o.pace))
	}
	if o.window < 1 || o.window > o.events {
		problems = append(problems, fmt.Errorf("--window %d: want 1 to --events (%d) events per window", o.window, o.events))
	}
	if o.replayCost < 0 || o.replayCost > time.Second {
		problems = append(problems, fmt.Errorf("--replay-cost %v: want 0 to 1s per event", o.replayCost))
	}
	if o.standbys < 0 || o.standbys > shard.MaxStandbys {
		problems = append(problems, fmt.Errorf("--standbys %d: want 0 to %d per shard", o.standbys, shard.MaxStandbys))
	}
	return errors.Join(problems...)
}

// pauseFor is how long the paused worker stays stopped: past its lease
// and the lock-delay, so its shards move while it is away.
func (o options) pauseFor() time.Duration { return 2*o.policy.TTL + o.policy.EffectiveLockDelay() }

// maxHold is postgres.Config.MaxHold: the step-down deadline, as the
// offsets/postgres docs say, but not below the store's minimum.
func (o options) maxHold() time.Duration {
	return max(o.policy.StepDownAfter(), postgres.MinMaxHold)
}

// result is what the run ends with.
type result struct {
	proof          pipeline.Proof
	kills, pauses  int
	joins          int
	stale, ended   int64
	batches        int64
	failedTx       int64
	ownedByTheDead int
	windows        pipeline.WindowProof
	// Cold and warm handler starts: state rebuilt from the stream, or
	// taken from a standby; standbys asked for per shard.
	cold, warm int64
	standbys   int
}

// check is the run's verdict.
func (r result) check() error {
	var problems []error
	if r.proof.Duplicates != 0 {
		problems = append(problems, fmt.Errorf("%d events applied more than once", r.proof.Duplicates))
	}
	if r.proof.Gaps != 0 {
		problems = append(problems, fmt.Errorf("%d events never applied", r.proof.Gaps))
	}
	if r.proof.Foreign != 0 {
		problems = append(problems, fmt.Errorf("%d effects of events the stream does not have", r.proof.Foreign))
	}
	if r.proof.Behind != 0 {
		problems = append(problems, fmt.Errorf("%d partitions whose committed offset is not their last event's sequence", r.proof.Behind))
	}
	if r.kills < 2 || r.pauses < 1 || r.joins < 1 {
		problems = append(problems, fmt.Errorf("the faults did not all happen: %d kills, %d pauses, %d joins", r.kills, r.pauses, r.joins))
	}
	if r.stale < 1 {
		problems = append(problems, errors.New("no transaction of a superseded owner was refused by the fence: the fence was never tested"))
	}
	if r.ownedByTheDead != 0 {
		problems = append(problems, fmt.Errorf("%d shards still owned by dead workers at the end", r.ownedByTheDead))
	}
	if !r.windows.OK() {
		problems = append(problems, fmt.Errorf("windows: %d written twice, %d missing, %d not equal to a recomputation from the stream",
			r.windows.Duplicates, r.windows.Missing, r.windows.Wrong))
	}
	if r.standbys > 0 && r.warm == 0 {
		problems = append(problems, fmt.Errorf("%d standbys per shard, but no handler started warm: the standbys were never used", r.standbys))
	}
	return errors.Join(problems...)
}

// proc is what the story keeps beside each member: its offsets store,
// its handlers' state, and how many times it resumed from a pause.
type proc struct {
	store   *postgres.Store
	windows *pipeline.Windows
	resumed atomic.Int64
}

// story is one run.
type story struct {
	o      options
	out    io.Writer
	mu     sync.Mutex // serializes say
	fleet  inproc.Fleet[*proc]
	stats  pipeline.Stats
	tables pipeline.Tables
	js     jetstream.JetStream
	ids    []shard.ID
	part   map[shard.ID]int

	// pauseArmed names the member whose next transaction pauses it.
	pauseArmed atomic.Pointer[inproc.Member[*proc]]
	paused     chan *inproc.Member[*proc] // receives the member once it paused
}

func (s *story) say(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, format+"\n", args...)
}

// run plays the story once and prints its transcript to out.
func run(ctx context.Context, o options, out io.Writer) (result, error) {
	ctx, cancel := context.WithCancel(ctx) // an early return stops the producer too
	defer cancel()
	var res result
	s := &story{o: o, out: out, paused: make(chan *inproc.Member[*proc], 1)}
	fleetCfg := shard.Config{Shards: o.partitions}
	s.ids = fleetCfg.IDs()
	s.part = make(map[shard.ID]int, len(s.ids))
	for i, id := range s.ids {
		s.part[id] = i
	}

	srv, err := startServers(o)
	if err != nil {
		return res, err
	}
	defer srv.close()
	for _, w := range srv.what {
		s.say("using %s", w)
	}
	nc, js, err := pipeline.Connect(srv.natsURL, "jetstream-example")
	if err != nil {
		return res, err
	}
	defer nc.Close()
	s.js = js
	if _, err := pipeline.CreateStream(ctx, js); err != nil {
		return res, err
	}
	defer js.DeleteStream(context.WithoutCancel(ctx), pipeline.Stream) //nolint:errcheck // best effort

	pool, err := pgxpool.New(ctx, srv.dsn)
	if err != nil {
		return res, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer pool.Close()
	s.tables = pipeline.Tables{Schema: "jetstream_" + pgserver.RandomHex(4)}
	if err := s.tables.Create(ctx, pool); err != nil {
		return res, err
	}
	defer s.tables.Drop(context.WithoutCancel(ctx), pool) //nolint:errcheck // best effort

	coords, err := newCoordinators(o)
	if err != nil {
		return res, err
	}
	defer coords.close()

	s.say("stream %s: %d partitions (%s … %s), %d events each, one to every partition per %v; offsets in %s",
		pipeline.Stream, o.partitions, pipeline.Subject(0), pipeline.Subject(o.partitions-1), o.events, o.pace, s.tables.Offsets())
	s.say("fleet: %d workers on %s, lease TTL %v; PostgreSQL ends a vanished owner's transaction after %v (MaxHold)",
		o.workers, coords.name, o.policy.TTL, o.maxHold())
	defer s.stopFleet()
	for i := 1; i <= o.workers; i++ {
		if err := s.start(ctx, fmt.Sprintf("w%02d", i), coords, srv.dsn, fleetCfg); err != nil {
			return res, err
		}
	}
	if err := s.waitOwned(ctx, coords.observer, nil); err != nil {
		return res, err
	}
	s.say("all %d shards owned", len(s.ids))
	if err := s.storeStandbys(ctx, coords.observer); err != nil {
		return res, err
	}

	produced := make(chan error, 1)
	var rounds atomic.Int64
	go func() {
		produced <- pipeline.Produce(ctx, js, o.partitions, o.events, o.pace, func(n int64) { rounds.Store(n) })
	}()
	at := func(f float64) int64 { return max(1, int64(f*float64(o.events))) }
	waitRound := func(n int64) error {
		for rounds.Load() < n {
			if !pipeline.Sleep(ctx, 10*time.Millisecond) {
				return context.Cause(ctx)
			}
		}
		return nil
	}
	dead := map[string]bool{}
	for k, f := range o.killAt {
		if err := waitRound(at(f)); err != nil {
			return res, err
		}
		running := s.fleet.Running()
		victim := running[(1+3*k)%len(running)]
		owned := s.owned(ctx, coords.observer, victim.ID)
		victim.Crash()
		dead[victim.ID] = true
		res.kills++
		s.say("*** round %d: %s is killed holding %d shards; they move when its session expires", rounds.Load(), victim.ID, owned)
		if err := s.waitOwned(ctx, coords.observer, dead); err != nil {
			return res, err
		}
		s.say("    %s's shards have new owners", victim.ID)
	}

	if err := waitRound(at(o.pauseAt)); err != nil {
		return res, err
	}
	running := s.fleet.Running()
	target := running[len(running)/2]
	s.pauseArmed.Store(target)
	var m *inproc.Member[*proc]
	select {
	case m = <-s.paused:
	case <-time.After(30 * time.Second):
		return res, fmt.Errorf("no transaction of %s began within 30 s of arming its pause (is the producer done? --events %d)", target.ID, o.events)
	case <-ctx.Done():
		return res, context.Cause(ctx)
	}
	res.pauses++
	s.say("*** round %d: %s stops dead for %v with a transaction open (its fence taken, its effects not yet written), holding %d shards",
		rounds.Load(), m.ID, o.pauseFor(), s.owned(ctx, coords.observer, m.ID))
	if !pipeline.Sleep(ctx, o.pauseFor()) {
		return res, context.Cause(ctx)
	}
	m.Ext.resumed.Add(1)
	m.Unhold("pause")
	s.say("    %s resumes: its open transaction and its prepared batches reach PostgreSQL late", m.ID)

	if err := waitRound(at(o.joinAt)); err != nil {
		return res, err
	}
	id := fmt.Sprintf("w%02d", o.workers+1)
	if err := s.start(ctx, id, coords, srv.dsn, fleetCfg); err != nil {
		return res, err
	}
	res.joins++
	s.say("*** round %d: %s joins", rounds.Load(), id)

	if err := <-produced; err != nil {
		return res, fmt.Errorf("producing: %w", err)
	}
	s.say("all %d events published; waiting for every partition's offset to reach its last event", int64(o.partitions)*o.events)
	reader, err := postgres.Open(ctx, postgres.Config{Pool: pool, Table: s.tables.Offsets()})
	if err != nil {
		return res, err
	}
	defer reader.Close()
	h := s.handler(nil)
	h.Pool, h.Store = pool, reader
	settleCtx, cancelSettle := context.WithTimeout(ctx, o.settle)
	defer cancelSettle()
	for {
		p, err := h.Prove(settleCtx, s.ids)
		if err != nil && (settleCtx.Err() == nil || ctx.Err() != nil) {
			return res, err
		}
		if err == nil && p.Behind == 0 {
			break
		}
		if !pipeline.Sleep(settleCtx, 250*time.Millisecond) {
			s.say("!!! partitions still behind after %v", o.settle)
			break
		}
	}
	snap, err := coords.observer.Fleet().Watch(ctx, 0)
	if err != nil {
		return res, err
	}
	for _, owner := range snap.Owners() {
		if dead[owner] {
			res.ownedByTheDead++
		}
	}
	// The proof proper, once every worker has stopped and thawed: nothing
	// can write after it.
	s.stopFleet()
	if res.proof, err = h.Prove(ctx, s.ids); err != nil {
		return res, err
	}
	res.stale, res.ended = s.stats.Stale.Load(), s.stats.Ended.Load()
	res.batches, res.failedTx = s.stats.Batches.Load(), s.stats.Failed.Load()
	res.proof.SetRefused(s.stats.Refused())
	if res.windows, err = h.ProveWindows(ctx, o.partitions, o.window); err != nil {
		return res, err
	}
	res.standbys = o.standbys
	for _, m := range s.fleet.All() {
		res.cold += m.Ext.windows.Cold.Load()
		res.warm += m.Ext.windows.Warm.Load()
	}

	s.say("")
	if err := res.proof.Print(out, o.allLines); err != nil {
		return res, err
	}
	verdict := "exactly once, as promised"
	if err := res.check(); err != nil {
		verdict = "NOT AS PROMISED: " + err.Error()
	}
	s.say("\n%d kills, %d pause, %d join; %d batches committed; transactions of superseded owners: %d refused by the fence, %d ended by PostgreSQL while paused; %d other failures retried",
		res.kills, res.pauses, res.joins, res.batches, res.stale, res.ended, res.failedTx)
	if err := s.stats.FirstFailure(); err != nil {
		s.say("the first other failure: %v", err)
	}
	s.say("windows of %d events: %d expected from the stream, %d written, %d twice, %d missing, %d not equal to the recomputation; handlers started cold (state rebuilt) %d times, warm (a standby's state) %d times",
		o.window, res.windows.Expected, res.windows.Written, res.windows.Duplicates, res.windows.Missing, res.windows.Wrong, res.cold, res.warm)
	s.say("%d events published, %d applied, %d duplicates, %d gaps: %s", res.proof.Published, res.proof.Applied, res.proof.Duplicates, res.proof.Gaps, verdict)
	return res, nil
}

// start makes and starts worker id with its own offsets store (its own
// connection pool, as a process of its own would have).
func (s *story) start(ctx context.Context, id string, coords *coordinators, dsn string, fleetCfg shard.Config) error {
	coord, err := coords.forMember()
	if err != nil {
		return err
	}
	m := s.fleet.New(id, coord)
	st, err := postgres.Open(ctx, postgres.Config{DSN: withPoolSize(dsn, 32), Table: s.tables.Offsets(), MaxHold: s.o.maxHold()})
	if err != nil {
		return fmt.Errorf("offsets store of %s: %w", id, err)
	}
	m.Ext = &proc{store: st, windows: &pipeline.Windows{Size: s.o.window, ReplayCost: s.o.replayCost}}
	h := s.handler(m)
	h.Store, h.Windows = st, m.Ext.windows
	err = s.fleet.Start(m, worker.Config{
		Fleet: fleetCfg, Coordinator: m.Coordinator(), Offsets: st, Handler: pipeline.Stateful{Handler: h},
		Policy: s.o.policy, DrainTimeout: 2 * time.Second,
	})
	if err != nil {
		st.Close()
		return err
	}
	return nil
}

// handler is member m's handler (m nil: a handler only for the proof).
// Its hooks stop it where m's process stops: at m's gate while m is paused
// or dead; and the first transaction of m's after the story arms the pause
// pauses m, from inside the transaction, its fence taken.
func (s *story) handler(m *inproc.Member[*proc]) *pipeline.Handler {
	h := &pipeline.Handler{JS: s.js, Tables: s.tables, Partition: s.part, Stats: &s.stats}
	if m == nil {
		return h
	}
	wait := func() pipeline.Resumed {
		before := m.Ext.resumed.Load()
		m.WaitThawed(context.Background()) // a stopped process notices nothing
		switch {
		case m.Crashed():
			return pipeline.Died
		case m.Ext.resumed.Load() != before:
			return pipeline.Thawed
		}
		return pipeline.Ran
	}
	h.Hooks.Before = func(*worker.Claim) pipeline.Resumed { return wait() }
	h.Hooks.InTx = func(*worker.Claim) pipeline.Resumed {
		if s.pauseArmed.CompareAndSwap(m, nil) {
			// Every call to the coordinator hangs and the handlers stop at
			// the gate: the process is stopped, its session left to expire.
			m.Hold("pause", inproc.Hold{Mode: faults.Hang, Freeze: true})
			s.paused <- m
		}
		return wait()
	}
	return h
}

// storeStandbys asks for the story's standbys per shard in the fleet's
// policy, as shardctl balance -by count -standbys K does.
func (s *story) storeStandbys(ctx context.Context, c shard.Coordinator) error {
	if _, err := c.Fleet().SetPolicy(ctx, shard.BalancePolicy{Standbys: s.o.standbys}, false); err != nil {
		return fmt.Errorf("storing %d standbys per shard: %w", s.o.standbys, err)
	}
	s.say("state: windows of %d events per partition; a cold start rebuilds the open one from the stream (%v an event); %d standbys per shard keep it warm elsewhere",
		s.o.window, s.o.replayCost, s.o.standbys)
	return nil
}

// stopFleet stops every worker (the dead ones' frozen handlers return
// without writing) and closes their stores; it may be called again.
func (s *story) stopFleet() {
	s.fleet.StopAll()
	for _, m := range s.fleet.All() {
		if m.Ext.store != nil {
			_ = m.Ext.store.Close()
			m.Ext.store = nil
		}
	}
}

// owned is how many shards id holds now.
func (s *story) owned(ctx context.Context, c shard.Coordinator, id string) int {
	snap, err := c.Fleet().Watch(ctx, 0)
	if err != nil {
		return 0
	}
	return snap.Counts()[id]
}

// waitOwned waits until every shard is owned by a worker not in dead. It
// follows the fleet (shard.Follow: a blocking query per change) rather
// than polling it, and gives up on the first failed read.
func (s *story) waitOwned(ctx context.Context, c shard.Coordinator, dead map[string]bool) error {
	owned := false
	err := shard.Follow(ctx, c.Fleet().Watch, shard.FollowOptions{OnError: func(error) bool { return false }}, func(snap shard.Snapshot) (time.Time, error) {
		owners := snap.Owners()
		owned = len(owners) == len(s.ids)
		for _, w := range owners {
			owned = owned && !dead[w]
		}
		if owned {
			return time.Time{}, shard.ErrStopFollowing
		}
		return time.Time{}, nil
	})
	switch {
	case err != nil:
		return err
	case !owned:
		return context.Cause(ctx)
	}
	return nil
}

// coordinators gives each member its coordinator: the one embedded
// coordinator, or a client of its own of Consul or etcd per member.
type coordinators struct {
	name     string
	observer shard.Coordinator // the story's own view of the fleet
	members  *engine.Members
}

func newCoordinators(o options) (*coordinators, error) {
	choice := o.engine
	if choice == nil {
		choice = &engine.Choice{}
	}
	c := &coordinators{name: choice.Name(), members: choice.Members()}
	obs, err := c.forMember()
	if err != nil {
		c.close()
		return nil, err
	}
	c.observer = obs
	return c, nil
}

func (c *coordinators) forMember() (shard.Coordinator, error) { return c.members.New() }

// close removes the fleet's keys (best effort) and closes the clients.
func (c *coordinators) close() { c.members.Close() }

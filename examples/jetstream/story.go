package main

import (
	"context"
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
	// The stream's layouts before and after the switch, the fleet's
	// shards of each (parents, children), every shard's partition, and
	// ids: the parents, then the children (ids[p] consumes partition p).
	from, to          pipeline.Layout
	parents, children shard.Segment
	ids               []shard.ID
	part              map[shard.ID]int
	rounds            atomic.Int64 // rounds the producer has had acknowledged

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
	s.from, s.to = pipeline.Layout{First: 0, Count: o.partitions}, pipeline.Layout{First: o.partitions, Count: o.to()}
	name := fleetCfg.Normalize().Name
	s.parents, s.children = shard.Segment{Name: name, Shards: o.partitions}, shard.Segment{Layout: 1, Name: name + ".r1", Shards: o.to(), Base: o.partitions}
	s.part = map[shard.ID]int{}
	for _, seg := range []shard.Segment{s.parents, s.children} {
		for i := range seg.Shards {
			s.ids = append(s.ids, seg.ID(i))
			s.part[seg.ID(i)] = seg.Base + i
		}
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

	keys := pipeline.ChooseKeys(o.keysPer, s.from, s.to)
	s.say("stream %s: %d partitions (%s … %s) until the switch, then %d (%s … %s); %d keys (order ids), each event numbered in its key's own sequence; %d rounds at least, one event to every partition per %v; offsets in %s",
		pipeline.Stream, s.from.Count, pipeline.Subject(s.from.First), pipeline.Subject(s.from.Last()), s.to.Count, pipeline.Subject(s.to.First), pipeline.Subject(s.to.Last()),
		len(keys), o.events, o.pace, s.tables.Offsets())
	s.say("fleet: %d workers on %s, lease TTL %v; PostgreSQL ends a vanished owner's transaction after %v (MaxHold)",
		o.workers, coords.name, o.policy.TTL, o.maxHold())
	defer s.stopFleet()
	for i := 1; i <= o.workers; i++ {
		if err := s.start(ctx, fmt.Sprintf("w%02d", i), coords, srv.dsn, fleetCfg); err != nil {
			return res, err
		}
	}
	if err := s.waitSettled(ctx, coords.observer, nil); err != nil {
		return res, err
	}
	s.say("all %d shards owned", o.partitions)
	if err := s.storeStandbys(ctx, coords.observer); err != nil {
		return res, err
	}

	switchNow, switched := make(chan struct{}), make(chan int64, 1)
	producer := &pipeline.Keyed{JS: js, Keys: keys, From: s.from, To: s.to, Pace: o.pace,
		Rounds: o.events, Tail: o.events - o.at(o.switchAt), Switch: switchNow,
		After: func(n int64) { s.rounds.Store(n) }, Switched: func(n int64) { switched <- n }}
	type production struct {
		published int64
		err       error
	}
	produced := make(chan production, 1)
	go func() {
		n, err := producer.Run(ctx)
		produced <- production{n, err}
	}()
	dead := map[string]bool{}
	if err := s.faults(ctx, coords, srv.dsn, fleetCfg, dead, switchNow, switched, &res); err != nil {
		return res, err
	}
	p := <-produced
	if p.err != nil {
		return res, fmt.Errorf("producing: %w", p.err)
	}
	res.published = p.published
	s.say("all %d events and markers published (%d rounds); waiting for every partition's offset to reach its last message", p.published, s.rounds.Load())
	return res, s.prove(ctx, pool, coords, dead, &res)
}

// faults are the story's faults, each at its round: two kills, the
// switch and the reshard with a kill during it, a pause, a join.
func (s *story) faults(ctx context.Context, coords *coordinators, dsn string, fleetCfg shard.Config, dead map[string]bool,
	switchNow chan<- struct{}, switched <-chan int64, res *result) error {
	o := s.o
	for k, f := range o.killAt {
		if err := s.waitRound(ctx, o.at(f)); err != nil {
			return err
		}
		running := s.fleet.Running()
		victim := running[(1+3*k)%len(running)]
		owned := s.owned(ctx, coords.observer, victim.ID)
		victim.Crash()
		dead[victim.ID] = true
		res.kills++
		s.say("*** round %d: %s is killed holding %d shards; they move when its session expires", s.rounds.Load(), victim.ID, owned)
		if err := s.waitSettled(ctx, coords.observer, dead); err != nil {
			return err
		}
		s.say("    %s's shards have new owners", victim.ID)
	}

	if err := s.waitRound(ctx, o.at(o.switchAt)); err != nil {
		return err
	}
	var err error
	if res.reshard, err = s.reshard(ctx, coords, dead, switchNow, switched); err != nil {
		return err
	}
	res.kills++ // the one during the reshard

	if err := s.waitRound(ctx, o.at(o.pauseAt)); err != nil {
		return err
	}
	running := s.fleet.Running()
	target := running[len(running)/2]
	s.pauseArmed.Store(target)
	var m *inproc.Member[*proc]
	select {
	case m = <-s.paused:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("no transaction of %s began within 30 s of arming its pause (is the producer done? --events %d)", target.ID, o.events)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	res.pauses++
	s.say("*** round %d: %s stops dead for %v with a transaction open (its fence taken, its effects not yet written), holding %d shards",
		s.rounds.Load(), m.ID, o.pauseFor(), s.owned(ctx, coords.observer, m.ID))
	if !pipeline.Sleep(ctx, o.pauseFor()) {
		return context.Cause(ctx)
	}
	m.Ext.resumed.Add(1)
	m.Unhold("pause")
	s.say("    %s resumes: its open transaction and its prepared batches reach PostgreSQL late", m.ID)

	if err := s.waitRound(ctx, o.at(o.joinAt)); err != nil {
		return err
	}
	id := fmt.Sprintf("w%02d", o.workers+1)
	if err := s.start(ctx, id, coords, dsn, fleetCfg); err != nil {
		return err
	}
	res.joins++
	s.say("*** round %d: %s joins", s.rounds.Load(), id)
	return nil
}

// waitRound waits until the producer has had n rounds acknowledged.
func (s *story) waitRound(ctx context.Context, n int64) error {
	for s.rounds.Load() < n {
		if !pipeline.Sleep(ctx, 10*time.Millisecond) {
			return context.Cause(ctx)
		}
	}
	return nil
}

// prove waits for every partition's offset to reach its last message,
// stops the fleet, reads the stream and PostgreSQL back, and prints the
// proof.
func (s *story) prove(ctx context.Context, pool *pgxpool.Pool, coords *coordinators, dead map[string]bool, res *result) error {
	o := s.o
	reader, err := postgres.Open(ctx, postgres.Config{Pool: pool, Table: s.tables.Offsets()})
	if err != nil {
		return err
	}
	defer reader.Close()
	h := s.handler(nil)
	h.Pool, h.Store = pool, reader
	settleCtx, cancelSettle := context.WithTimeout(ctx, o.settle)
	defer cancelSettle()
	for {
		p, err := h.Prove(settleCtx, s.ids)
		if err != nil && (settleCtx.Err() == nil || ctx.Err() != nil) {
			return err
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
		return err
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
		return err
	}
	res.stale, res.ended = s.stats.Stale.Load(), s.stats.Ended.Load()
	res.batches, res.failedTx = s.stats.Batches.Load(), s.stats.Failed.Load()
	res.closed, res.childStarts, res.shortParents = s.stats.Closed.Load(), s.stats.ChildStarts.Load(), s.stats.ShortParents.Load()
	res.proof.SetRefused(s.stats.Refused())
	if res.windows, err = h.ProveWindows(ctx, len(s.ids), o.window); err != nil {
		return err
	}
	if res.keys, err = h.ProveKeys(ctx, len(s.ids)); err != nil {
		return err
	}
	res.standbys = o.standbys
	for _, m := range s.fleet.All() {
		res.cold += m.Ext.windows.Cold.Load()
		res.warm += m.Ext.windows.Warm.Load()
	}

	s.say("")
	if err := res.proof.Print(s.out, o.allLines); err != nil {
		return err
	}
	verdict := "exactly once, as promised"
	if err := res.check(); err != nil {
		verdict = "NOT AS PROMISED: " + err.Error()
	}
	s.say("\n%d kills (one during the reshard), %d pause, %d join; %d batches committed; transactions of superseded owners: %d refused by the fence, %d ended by PostgreSQL while paused; %d other failures retried",
		res.kills, res.pauses, res.joins, res.batches, res.stale, res.ended, res.failedTx)
	if err := s.stats.FirstFailure(); err != nil {
		s.say("the first other failure: %v", err)
	}
	s.say("windows of %d events: %d expected from the stream, %d written, %d twice, %d missing, %d not equal to the recomputation; handlers started cold (state rebuilt) %d times, warm (a standby's state) %d times",
		o.window, res.windows.Expected, res.windows.Written, res.windows.Duplicates, res.windows.Missing, res.windows.Wrong, res.cold, res.warm)
	s.say("reshard %d → %d: %d of %d old partitions end with their marker, closed there (%d closes committed); %d starts of the %d children, %d given a parent short of its marker",
		res.reshard.from, res.reshard.to, res.proof.Markers, s.from.Count, res.closed, res.childStarts, s.to.Count, res.shortParents)
	k := res.keys
	s.say("per key, across the switch: %d keys, %d keyed events, %d applied, %d duplicates, %d gaps; %d pairs of a key's consecutive events, %d out of order; %d keys crossed the switch, %d of them out of order",
		k.Keys, k.Events, k.Applied, k.Duplicates, k.Gaps, k.Pairs, k.OutOfOrder, k.CrossedKeys, k.CrossedOutOfOrder)
	s.say("%d events published, %d applied, %d duplicates, %d gaps; each key's order across the switch: %d of %d pairs out of order: %s",
		res.proof.Published, res.proof.Applied, res.proof.Duplicates, res.proof.Gaps, k.OutOfOrder, k.Pairs, verdict)
	return nil
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

// waitSettled waits until the fleet runs no reshard and every shard it
// runs is owned by a worker not in dead. It follows the fleet
// (shard.Follow: a blocking query per change) rather than polling it, and
// gives up on the first failed read.
func (s *story) waitSettled(ctx context.Context, c shard.Coordinator, dead map[string]bool) error {
	return s.follow(ctx, c, func(snap shard.Snapshot) bool { return settled(snap, dead) })
}

// follow follows the fleet until done says so of a snapshot; it gives up
// on the first failed read.
func (s *story) follow(ctx context.Context, c shard.Coordinator, done func(shard.Snapshot) bool) error {
	ok := false
	err := shard.Follow(ctx, c.Fleet().Watch, shard.FollowOptions{OnError: func(error) bool { return false }}, func(snap shard.Snapshot) (time.Time, error) {
		if ok = done(snap); ok {
			return time.Time{}, shard.ErrStopFollowing
		}
		return time.Time{}, nil
	})
	switch {
	case err != nil:
		return err
	case !ok:
		return context.Cause(ctx)
	}
	return nil
}

// settled reports whether snap's fleet runs no reshard and every shard
// it runs is owned by a worker not in dead.
func settled(snap shard.Snapshot, dead map[string]bool) bool {
	if snap.Config == nil || snap.Config.Resharding() {
		return false
	}
	owners := snap.Owners()
	for _, id := range snap.Config.IDs() {
		if w, ok := owners[id]; !ok || dead[w] {
			return false
		}
	}
	return true
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

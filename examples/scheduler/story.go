package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/shardlease/shardlease/election"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"

	"github.com/shardlease/shardlease/examples/internal/netsim"
)

// options set the cast and the timings.
type options struct {
	instances   int
	date        string
	customers   []string
	pace        time.Duration // one enqueue per pace
	commitEvery int           // the leader records its progress every so many jobs
	killAt      int           // the first leader is killed after enqueueing this many jobs
	cutAt       int           // the second leader is cut off after this many
	policy      shard.LeasePolicy
}

func defaultOptions() options {
	return options{
		instances: 5,
		date:      "2024-03-01",
		customers: []string{"acme", "globex", "initech", "umbrella", "hooli", "stark",
			"wayne", "wonka", "tyrell", "cyberdyne", "soylent", "oscorp"},
		pace:        150 * time.Millisecond,
		commitEvery: 3,
		killAt:      5,
		cutAt:       8,
		policy:      shard.LeasePolicy{TTL: 2 * time.Second, RenewEvery: 400 * time.Millisecond, PauseBudget: time.Second, LockDelay: time.Second},
	}
}

// term is one leader's term as the story saw it begin.
type term struct {
	leader string
	token  shard.Token
	from   int64 // the checkpoint it resumed from
}

// result is what the story ends with.
type result struct {
	jobs   []string
	order  []string               // keys in the order the queue accepted them
	queued map[string]shard.Token // key → token of the term that enqueued it
	dups   int                    // enqueues the queue refused as duplicates
	terms  []term
	roles  map[string][]election.Role // per instance, the roles it went through
	killed string
	cut    string
}

// check verifies the outcome the story promises.
func (r result) check() error {
	var problems []string
	if len(r.order) != len(r.jobs) {
		problems = append(problems, fmt.Sprintf("the queue holds %d jobs, want %d", len(r.order), len(r.jobs)))
	}
	for _, j := range r.jobs {
		if _, ok := r.queued[j]; !ok {
			problems = append(problems, "missing "+j)
		}
	}
	if len(r.terms) < 3 {
		problems = append(problems, fmt.Sprintf("%d terms, want three (first leader, after the kill, after the partition)", len(r.terms)))
	}
	for i := 1; i < len(r.terms); i++ {
		if r.terms[i].token <= r.terms[i-1].token {
			problems = append(problems, fmt.Sprintf("term %d has token %d, not above %d", i+1, r.terms[i].token, r.terms[i-1].token))
		}
	}
	want := []election.Role{election.RoleLeader, election.RoleSteppingDown, election.RoleCandidate, election.RoleFollower}
	if !subsequence(r.roles[r.cut], want) {
		problems = append(problems, fmt.Sprintf("the cut-off leader %s went through %v, want %v in order", r.cut, r.roles[r.cut], want))
	}
	if len(problems) > 0 {
		return fmt.Errorf("the story did not end as it must: %v", problems)
	}
	return nil
}

func subsequence(got, want []election.Role) bool {
	i := 0
	for _, r := range got {
		if i < len(want) && r == want[i] {
			i++
		}
	}
	return i == len(want)
}

// story is the shared state of one run.
type story struct {
	o     options
	out   io.Writer
	jobs  []string
	queue *queue

	mu      sync.Mutex
	res     result
	hosts   map[string]*netsim.Host
	elected chan term     // every new term
	done    chan struct{} // closed when the batch is complete
	once    sync.Once
}

func (s *story) say(who, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if who == "" {
		fmt.Fprintf(s.out, format+"\n", args...)
		return
	}
	fmt.Fprintf(s.out, "%-8s %s\n", who, fmt.Sprintf(format, args...))
}

// run plays the story once and prints its transcript to out.
func run(ctx context.Context, o options, out io.Writer) (result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &story{o: o, out: out, queue: newQueue(), hosts: map[string]*netsim.Host{},
		elected: make(chan term, 16), done: make(chan struct{})}
	for _, c := range o.customers {
		s.jobs = append(s.jobs, fmt.Sprintf("invoice:%s:%s", c, o.date))
	}
	s.res = result{jobs: s.jobs, roles: map[string][]election.Role{}}
	coord := memory.New()
	checkpoints := offmem.New()
	defer checkpoints.Close()

	s.say("", "%d scheduler instances, one election (invoice-scheduler), %d invoice jobs for %s; the queue accepts each key once",
		o.instances, len(s.jobs), o.date)
	var running sync.WaitGroup
	var hosts []*netsim.Host
	for i := 1; i <= o.instances; i++ {
		h := netsim.NewHost(fmt.Sprintf("sched-%d", i))
		hosts = append(hosts, h)
		s.hosts[h.ID] = h
		e, err := election.New(election.Config{
			ID: h.ID, Name: "invoice-scheduler",
			Coordinator: netsim.Coordinator(coord, h),
			Offsets:     netsim.Store{Store: checkpoints, H: h},
			Lead:        s.lead(h),
			OnChange:    s.onChange(h),
			Policy:      o.policy, DrainTimeout: 2 * time.Second,
		})
		if err != nil {
			cancel()
			running.Wait()
			return s.res, err
		}
		running.Go(func() {
			if err := e.Run(ctx); err != nil {
				s.say(h.ID, "stopped with an error: %v", err)
			}
		})
	}
	stopAll := func() {
		for _, h := range hosts {
			close(h.Gone)
		}
		cancel()
		running.Wait()
	}

	// The kill and the partition happen inside the leaders' batches (see
	// lead). Here: heal the partition once a third term has begun, then
	// wait for the batch to complete and the healed instance to follow.
	err := s.script(ctx)
	if err == nil {
		s.say("", "*** stopping every instance")
	}
	stopAll()
	if err != nil {
		return s.res, err
	}
	s.res.order, s.res.queued, s.res.dups = s.queue.contents()
	verdict := "every invoice exactly once"
	if err := s.res.check(); err != nil {
		verdict = err.Error()
	}
	s.say("", "queue: %d of %d invoices, %d duplicate enqueues refused by their idempotency keys, %d leader terms: %s",
		len(s.res.order), len(s.jobs), s.res.dups, len(s.res.terms), verdict)
	return s.res, nil
}

// script waits for the third term, heals the partition, and waits for the
// end of the batch and for the healed instance to follow the new leader.
func (s *story) script(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return errors.New("interrupted")
		case <-s.elected:
			s.mu.Lock()
			n, cut := len(s.res.terms), s.res.cut
			s.mu.Unlock()
			if n < 3 || cut == "" {
				continue
			}
			s.hosts[cut].Set(netsim.Up)
			s.say("", "*** the partition heals: %s can reach the others again", cut)
			select {
			case <-s.done:
			case <-ctx.Done():
				return errors.New("interrupted")
			}
			for s.role(cut) != election.RoleFollower {
				select {
				case <-ctx.Done():
					return errors.New("interrupted")
				case <-time.After(20 * time.Millisecond):
				}
			}
			return nil
		}
	}
}

func (s *story) role(id string) election.Role {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.res.roles[id]
	if len(rs) == 0 {
		return ""
	}
	return rs[len(rs)-1]
}

// onChange prints an instance's role changes (a dead process prints
// nothing) and records the terms.
func (s *story) onChange(h *netsim.Host) func(election.Change) {
	return func(c election.Change) {
		if h.Get() == netsim.Dead {
			return
		}
		s.mu.Lock()
		s.res.roles[c.Instance] = append(s.res.roles[c.Instance], c.Role)
		s.mu.Unlock()
		switch c.Role {
		case election.RoleLeader:
			s.say(c.Instance, "leader (token %d)", c.Token)
		case election.RoleFollower:
			s.say(c.Instance, "follower of %s (token %d)", c.Leader, c.Token)
		case election.RoleSteppingDown:
			s.say(c.Instance, "stepping_down: %v", c.Cause)
		default:
			s.say(c.Instance, "%s", c.Role)
		}
	}
}

// lead is an instance's Lead: enqueue the day's jobs from the checkpoint on,
// one per pace, recording progress every commitEvery jobs.
func (s *story) lead(h *netsim.Host) func(context.Context, *election.Leadership) error {
	return func(ctx context.Context, l *election.Leadership) error {
		n := s.newTerm(h.ID, l.Token, l.Start.Offset)
		next := int(l.Start.Offset)
		s.say(h.ID, "resumes the batch at job %d of %d (the last checkpoint)", next, len(s.jobs))
		failing := false
		for next < len(s.jobs) {
			select {
			case <-ctx.Done():
				return nil // revoked or lost: stop enqueueing at once
			case <-time.After(s.o.pace):
			}
			if h.Get() == netsim.Dead {
				<-h.Gone // the process is gone: nothing more happens here
				return nil
			}
			key := s.jobs[next]
			if err := h.Reach(); err != nil {
				if !failing {
					s.say(h.ID, "enqueue %s: %v; retrying", key, netsim.ErrUnreachable)
				}
				failing = true
				continue
			}
			failing = false
			_, what := s.queue.enqueue(key, l.Token)
			s.say(h.ID, "enqueue %s (token %d): %s", key, l.Token, what)
			next++
			if next%s.o.commitEvery == 0 || next == len(s.jobs) {
				if err := l.Commit(ctx, int64(next)); err != nil {
					s.say(h.ID, "checkpoint %d refused: %v", next, err)
					return err
				}
				s.say(h.ID, "checkpoint: %d of %d done (token %d)", next, len(s.jobs), l.Token)
			}
			s.strike(h, n, next)
		}
		s.say(h.ID, "batch %s complete", s.o.date)
		s.once.Do(func() { close(s.done) })
		<-ctx.Done()
		return nil
	}
}

// strike applies the story's faults at their exact points in the batch.
func (s *story) strike(h *netsim.Host, term, enqueued int) {
	switch {
	case term == 1 && enqueued == s.o.killAt:
		h.Set(netsim.Dead)
		s.mu.Lock()
		s.res.killed = h.ID
		s.mu.Unlock()
		s.say("", "*** %s is killed mid-batch: %d jobs enqueued, its checkpoint says %d", h.ID, enqueued,
			enqueued/s.o.commitEvery*s.o.commitEvery)
	case term == 2 && enqueued == s.o.cutAt:
		h.Set(netsim.Partitioned)
		s.mu.Lock()
		s.res.cut = h.ID
		s.mu.Unlock()
		s.say("", "*** %s is cut off from the coordinator, the checkpoint store and the queue (network partition): %d jobs enqueued, checkpoint %d",
			h.ID, enqueued, enqueued/s.o.commitEvery*s.o.commitEvery)
	}
}

// newTerm records a term when its first Lead call starts and returns its
// number (1-based); a Lead restarted within a term gets the same number.
func (s *story) newTerm(id string, token shard.Token, from int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, tm := range s.res.terms {
		if tm.token == token {
			return i + 1
		}
	}
	tm := term{leader: id, token: token, from: from}
	s.res.terms = append(s.res.terms, tm)
	s.elected <- tm
	return len(s.res.terms)
}

package election_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/election"
	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/offsets"
	offmem "github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var testPolicy = shard.LeasePolicy{TTL: 10 * time.Second, RenewEvery: 2 * time.Second, PauseBudget: 5 * time.Second, LockDelay: 5 * time.Second}

// group runs instances of one election in a synctest bubble.
type group struct {
	t     *testing.T
	coord *memory.Coordinator
	store *offmem.Store
	mu    sync.Mutex
	log   map[string][]election.Change // every change, per instance
	inst  map[string]*instance
}

type instance struct {
	e      *election.Election
	faults *faults.Coordinator
	cancel context.CancelFunc
	done   chan error
}

func newGroup(t *testing.T) *group {
	return &group{t: t, coord: memory.New(), store: offmem.New(), log: map[string][]election.Change{}, inst: map[string]*instance{}}
}

// start runs an instance whose Lead commits its token as progress and
// waits for its term to end.
func (g *group) start(id string) *instance {
	g.t.Helper()
	return g.startWith(id, func(ctx context.Context, l *election.Leadership) error {
		if err := l.Commit(ctx, int64(l.Token)); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	})
}

func (g *group) startWith(id string, lead func(context.Context, *election.Leadership) error) *instance {
	g.t.Helper()
	fc := faults.Wrap(g.coord)
	e, err := election.New(election.Config{
		ID: id, Name: "scheduler", Coordinator: fc, Offsets: g.store, Lead: lead,
		OnChange: func(c election.Change) {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.log[c.Instance] = append(g.log[c.Instance], c)
		},
		Policy: testPolicy, JitterSeed: uint64(len(id)*7919 + int(id[len(id)-1])),
	})
	if err != nil {
		g.t.Fatalf("election.New(%s): %v", id, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{e: e, faults: fc, cancel: cancel, done: make(chan error, 1)}
	go func() { in.done <- e.Run(ctx) }()
	g.inst[id] = in
	g.t.Cleanup(func() { g.stop(id) })
	return in
}

func (g *group) stop(id string) error {
	in := g.inst[id]
	if in == nil {
		return nil
	}
	delete(g.inst, id)
	in.faults.Set(faults.Healthy)
	in.cancel()
	return <-in.done
}

// roles returns the sequence of roles an instance reported.
func (g *group) roles(id string) []election.Role {
	g.mu.Lock()
	defer g.mu.Unlock()
	var rs []election.Role
	for _, c := range g.log[id] {
		if len(rs) == 0 || rs[len(rs)-1] != c.Role {
			rs = append(rs, c.Role)
		}
	}
	return rs
}

// leaders returns the instances whose status is leader.
func (g *group) leaders() []string {
	var ids []string
	for id, in := range g.inst {
		if in.e.Status().Role == election.RoleLeader {
			ids = append(ids, id)
		}
	}
	return ids
}

func (g *group) onlyLeader() (string, election.Change) {
	g.t.Helper()
	ls := g.leaders()
	if len(ls) != 1 {
		g.t.Fatalf("leaders = %v, want exactly one", ls)
	}
	return ls[0], g.inst[ls[0]].e.Status()
}

func settle(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func TestOneLeaderAndFollowersWhoKnowIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGroup(t)
		for i := 1; i <= 5; i++ {
			g.start(fmt.Sprintf("i%d", i))
		}
		settle(5 * time.Second)
		leader, st := g.onlyLeader()
		if st.Token == 0 || st.Leader != leader {
			t.Fatalf("leader status %+v", st)
		}
		for id, in := range g.inst {
			if id == leader {
				continue
			}
			if s := in.e.Status(); s.Role != election.RoleFollower || s.Leader != leader || s.Token != st.Token {
				t.Errorf("%s status %+v, want follower of %s with token %d", id, s, leader, st.Token)
			}
		}
		if got := g.roles(leader); !equal(got, election.RoleCandidate, election.RoleLeader) {
			t.Errorf("leader's roles %v", got)
		}
		if cp, _ := g.store.Load(t.Context(), "scheduler-000"); cp.Offset != int64(st.Token) || cp.Floor != st.Token {
			t.Errorf("checkpoint %+v, want the leader's commit with its token %d", cp, st.Token)
		}
	})
}

// A leader that stops steps down with ErrRevoked, releases at once, and a
// follower takes over with a higher token, finding the old leader's
// checkpoint.
func TestGracefulStopHandsLeadershipOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGroup(t)
		var seen sync.Map
		for i := 1; i <= 3; i++ {
			id := fmt.Sprintf("i%d", i)
			g.startWith(id, func(ctx context.Context, l *election.Leadership) error {
				seen.Store(id, l.Start)
				if err := l.Commit(ctx, int64(l.Token)); err != nil {
					return err
				}
				<-ctx.Done()
				return nil
			})
		}
		settle(5 * time.Second)
		first, st := g.onlyLeader()
		if err := g.stop(first); err != nil {
			t.Fatalf("Run = %v", err)
		}
		settle(3 * time.Second)
		next, st2 := g.onlyLeader()
		if st2.Token <= st.Token {
			t.Errorf("new leader %s token %d, not above %d", next, st2.Token, st.Token)
		}
		if start, _ := seen.Load(next); start.(offsets.Checkpoint).Offset != int64(st.Token) {
			t.Errorf("new leader started from %+v, want the old leader's commit %d", start, st.Token)
		}
		roles := g.roles(first)
		if !equal(roles, election.RoleCandidate, election.RoleLeader, election.RoleSteppingDown, election.RoleStopped) {
			t.Errorf("stopped leader's roles %v", roles)
		}
		g.mu.Lock()
		var cause error
		for _, c := range g.log[first] {
			if c.Role == election.RoleSteppingDown {
				cause = c.Cause
			}
		}
		g.mu.Unlock()
		if !errors.Is(cause, worker.ErrRevoked) {
			t.Errorf("stepping down cause %v, want ErrRevoked", cause)
		}
	})
}

// A leader cut off from the coordinator steps down (ErrLost) at its local
// deadline, before its session can expire; another instance is elected with
// a higher token; when the partition heals, the old leader follows it.
func TestCutOffLeaderStepsDownAndFollowsAfterHealing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGroup(t)
		for i := 1; i <= 3; i++ {
			g.start(fmt.Sprintf("i%d", i))
		}
		settle(5 * time.Second)
		old, st := g.onlyLeader()
		cut := time.Now()
		g.inst[old].faults.Set(faults.Fail)

		settle(testPolicy.StepDownAfter())
		if s := g.inst[old].e.Status(); s.Role == election.RoleLeader {
			t.Fatalf("cut-off leader still leads %v after the cut", time.Since(cut))
		}
		settle(testPolicy.TTL + testPolicy.LockDelay)
		var next string
		for _, id := range g.leaders() {
			next = id
		}
		if next == "" || next == old {
			t.Fatalf("leaders %v after the old one's TTL", g.leaders())
		}
		g.inst[old].faults.Set(faults.Healthy)
		settle(10 * time.Second)
		s := g.inst[old].e.Status()
		if s.Role != election.RoleFollower || s.Leader != next || s.Token <= st.Token {
			t.Errorf("healed old leader: %+v, want follower of %s with a token above %d", s, next, st.Token)
		}
		if got := g.roles(old); !equal(got, election.RoleCandidate, election.RoleLeader, election.RoleSteppingDown,
			election.RoleCandidate, election.RoleFollower) {
			t.Errorf("old leader's roles %v", got)
		}
		g.mu.Lock()
		for _, c := range g.log[old] {
			if c.Role == election.RoleSteppingDown && !errors.Is(c.Cause, worker.ErrLost) {
				t.Errorf("stepping down cause %v, want ErrLost", c.Cause)
			}
		}
		g.mu.Unlock()
	})
}

// A Lead that returns during its term is run again with the same token;
// the instance stays leader meanwhile.
func TestLeadThatReturnsIsRestartedInTheSameTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGroup(t)
		var mu sync.Mutex
		var tokens []shard.Token
		g.startWith("solo", func(ctx context.Context, l *election.Leadership) error {
			mu.Lock()
			tokens = append(tokens, l.Token)
			mu.Unlock()
			return errors.New("batch failed")
		})
		settle(10 * time.Second)
		mu.Lock()
		defer mu.Unlock()
		if len(tokens) < 3 {
			t.Fatalf("Lead ran %d times in 10 s, want restarts", len(tokens))
		}
		for _, tk := range tokens {
			if tk != tokens[0] {
				t.Errorf("tokens %v, want one term", tokens)
				break
			}
		}
		if got := g.roles("solo"); !equal(got, election.RoleCandidate, election.RoleLeader) {
			t.Errorf("roles %v", got)
		}
	})
}

func TestNewNamesEveryProblem(t *testing.T) {
	_, err := election.New(election.Config{Name: "bad name", Policy: shard.LeasePolicy{TTL: time.Second, RenewEvery: time.Second}})
	if !errors.Is(err, election.ErrInvalidConfig) {
		t.Fatalf("New = %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"lead function is nil", `worker id ""`, "coordinator is nil", `"bad name"`, "exceeds ttl 1s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestRunTwiceIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGroup(t)
		in := g.start("solo")
		settle(time.Second)
		if err := in.e.Run(t.Context()); !errors.Is(err, worker.ErrAlreadyRunning) {
			t.Errorf("second Run = %v, want ErrAlreadyRunning", err)
		}
	})
}

func equal(got []election.Role, want ...election.Role) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

package chaos

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// testFleet is a fleet of n workers on agents workers/perAgent, with no
// processes: what the scheduler reads.
func testFleet(n, perAgent int) *Fleet {
	f := &Fleet{}
	for i := range n {
		if i%perAgent == 0 {
			f.Agents = append(f.Agents, &Agent{})
		}
		a := f.Agents[len(f.Agents)-1]
		w := &Worker{ID: string(rune('a' + i)), Agent: a}
		f.Workers, a.Workers = append(f.Workers, w), append(a.Workers, w)
	}
	return f
}

func workerByID(f *Fleet, id string) *Worker {
	for _, w := range f.Workers {
		if w.ID == id {
			return w
		}
	}
	return nil
}

// The assignor faults' victim is the worker holding P/assignor, and only
// when the rules allow a fault on it; otherwise the fault waits (later
// faults go first) and is never turned onto another worker.
func TestSchedulerPicksTheAssignor(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name     string
		plan     []Kind
		assignor string
		busy     []string // workers under another fault
		reserved int      // agent reserved by a blocked agent fault, 1-based; 0 none
		maxDown  int
		after    time.Duration // since the assignor fault first waited
		want     Kind          // the kind taken; "" none
		victim   string
		err      string
	}{
		{name: "idle assignor", plan: []Kind{AssignorKill9}, assignor: "c", maxDown: 3, want: AssignorKill9, victim: "c"},
		{name: "stop too", plan: []Kind{AssignorStop}, assignor: "e", maxDown: 3, want: AssignorStop, victim: "e"},
		{name: "busy assignor: a later fault goes first, elsewhere", plan: []Kind{AssignorStop, Kill9}, assignor: "a",
			busy: []string{"a"}, maxDown: 3, want: Kill9, victim: "b"},
		{name: "busy assignor, nothing else planned", plan: []Kind{AssignorKill9}, assignor: "a", busy: []string{"a"}, maxDown: 3},
		{name: "no assignor", plan: []Kind{AssignorKill9}, maxDown: 3},
		{name: "unknown assignor", plan: []Kind{AssignorKill9}, assignor: "zz", maxDown: 3},
		{name: "MaxDown reached", plan: []Kind{AssignorKill9}, assignor: "c", busy: []string{"a"}, maxDown: 1},
		{name: "agent reserved for an agent fault", plan: []Kind{AssignorKill9}, assignor: "c", reserved: 2, maxDown: 3},
		{name: "waited too long: failed, no victim", plan: []Kind{AssignorKill9}, assignor: "a", busy: []string{"a"},
			maxDown: 3, after: assignorWait, want: AssignorKill9, err: "the assignor a is under another fault"},
		{name: "no assignor for too long", plan: []Kind{AssignorStop}, maxDown: 3, after: assignorWait + time.Second,
			want: AssignorStop, err: "held by no one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := testFleet(6, 2) // agents: (a b) (c d) (e f)
			s := newScheduler(f, tc.plan, Limits{Lanes: 2, MaxDown: tc.maxDown}, func() string { return tc.assignor })
			for _, id := range tc.busy {
				s.busy[workerByID(f, id)] = true
				s.down++
			}
			if tc.reserved > 0 {
				s.reserved = f.Agents[tc.reserved-1]
			}
			rng := rand.New(rand.NewPCG(1, 2))
			p, ok, _ := s.try(rng, t0)
			if tc.after > 0 {
				if ok {
					t.Fatalf("took %s at once, want it to wait", p.kind)
				}
				p, ok, _ = s.try(rng, t0.Add(tc.after))
			}
			if (tc.want != "") != ok || p.kind != tc.want {
				t.Fatalf("took %v (%q), want %q", ok, p.kind, tc.want)
			}
			if !ok {
				return
			}
			var victims []string
			for _, v := range p.victims {
				victims = append(victims, v.ID)
			}
			if got := strings.Join(victims, ","); got != tc.victim {
				t.Errorf("victims %q, want %q", got, tc.victim)
			}
			if tc.err == "" && p.err != nil || tc.err != "" && (p.err == nil || !strings.Contains(p.err.Error(), tc.err)) {
				t.Errorf("err %v, want %q", p.err, tc.err)
			}
			if want := len(tc.busy) + len(p.victims); s.down != want {
				t.Errorf("down %d, want %d", s.down, want)
			}
		})
	}
}

// A fault whose victim turned out not to hold P/assignor any more is put
// back, its victim idle again, and is taken by the new assignor later; a
// busy assignor is hit once its fault is done.
func TestSchedulerUndoAndLater(t *testing.T) {
	f := testFleet(4, 2)
	holder := "a"
	s := newScheduler(f, []Kind{AssignorKill9, AssignorStop}, Limits{Lanes: 2, MaxDown: 3}, func() string { return holder })
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Unix(1000, 0)
	p, ok, _ := s.try(rng, now)
	if !ok || p.worker.ID != "a" {
		t.Fatalf("first pick %v %+v, want a", ok, p)
	}
	// a is now busy: the other assignor fault must wait, not hit b.
	if q, ok, _ := s.try(rng, now); ok {
		t.Fatalf("took %s on %v while the assignor is busy", q.kind, q.victims)
	}
	s.undo(p) // confirm found a deposed: the fault goes back
	if s.down != 0 || s.busy[f.Workers[0]] || s.left != 2 {
		t.Fatalf("after undo: down %d, a busy %v, left %d", s.down, s.busy[f.Workers[0]], s.left)
	}
	holder = "d"
	p, ok, _ = s.try(rng, now)
	if !ok || p.kind != AssignorKill9 || p.worker.ID != "d" {
		t.Fatalf("after the move: %v %s on %+v, want assignor-kill-9 on d", ok, p.kind, p.worker)
	}
	if _, ok, _ := s.try(rng, now); ok {
		t.Fatal("took the second assignor fault while d is busy")
	}
	s.done(p)
	q, ok, _ := s.try(rng, now.Add(time.Second))
	if !ok || q.kind != AssignorStop || q.worker.ID != "d" {
		t.Fatalf("after d's fault: %v %s on %+v, want assignor-sigstop on d", ok, q.kind, q.worker)
	}
	if _, _, done := s.try(rng, now); !done {
		t.Error("plan not done after both faults were taken")
	}
}

// Worker faults keep off the assignor fault's victim while it is busy, and
// the plan holds every kind perKind times.
func TestSchedulerNeverTwoOnOneWorker(t *testing.T) {
	f := testFleet(4, 2)
	var plan []Kind
	for range 3 {
		plan = append(plan, AssignorKill9, SigStop, Kill9)
	}
	s := newScheduler(f, plan, Limits{Lanes: 4, MaxDown: 3}, func() string { return "b" })
	rng := rand.New(rand.NewPCG(3, 4))
	seen := map[string]bool{}
	for {
		p, ok, _ := s.try(rng, time.Unix(1000, 0))
		if !ok {
			break
		}
		for _, v := range p.victims {
			if seen[v.ID] {
				t.Fatalf("%s hit twice at once", v.ID)
			}
			seen[v.ID] = true
		}
	}
	if s.down != 3 || !seen["b"] {
		t.Errorf("down %d, victims %v: want 3, b among them", s.down, seen)
	}
}

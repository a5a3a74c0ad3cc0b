package worker_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/assignor"
	"github.com/shardlease/shardlease/internal/faults"
	"github.com/shardlease/shardlease/internal/keycodec"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/worker"
)

// TestAssignmentKeyEditedByHand: a live worker whose own assignment key an
// operator deletes, overwrites with a value that cannot be read, or
// overwrites in a well-formed way with the current epoch — another
// worker's shards instead of its own, its own shards as free (which would
// make it think its locks were taken), or a stuck verdict written into the
// assignor's memory beside its key — keeps every shard it runs (no handler
// of it is revoked or restarted) and starts none; the assignor, held back
// for a second so that the worker surely sees the edit, then writes the
// key again at once, with the same shards, and ownership never changes.
// It fails if the worker obeys an edit (one hand edit, every shard of the
// worker moved twice), or if the assignor takes an edited verdict for its
// own (the worker given nothing more).
func TestAssignmentKeyEditedByHand(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(f *fleet, worker string)
	}{
		{"deleted", func(f *fleet, worker string) {
			if !f.coord.DeleteAssignment(worker) {
				f.t.Fatalf("no assignment key for %s to delete", worker)
			}
		}},
		{"garbage", func(f *fleet, worker string) { f.coord.PutAssignmentValue(worker, []byte("not an assignment")) }},
		{"another worker's shards", func(f *fleet, worker string) {
			s := f.snapshot()
			var others []shard.ID
			for id, w := range s.Owners() {
				if w != worker {
					others = append(others, id)
				}
			}
			slices.Sort(others)
			f.putAssignment(worker, shard.Assignment{Epoch: s.Assignor.Token, Shards: others})
		}},
		{"its shards as free", func(f *fleet, worker string) {
			s := f.snapshot()
			mine := s.Assignments[worker].Shards
			f.putAssignment(worker, shard.Assignment{Epoch: s.Assignor.Token, Shards: mine, Free: mine, AsOf: s.Index + 1000})
		}},
		{"judged stuck", func(f *fleet, worker string) {
			m, _ := f.snapshot().Member(worker)
			f.coord.PutAssignmentMemory(worker, assignor.Memory{Stuck: true, StuckSession: m.Session}.Encode())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFleet(t, 12)
				ids := []string{"a", "b", "c"}
				var held faults.Gate // closed: the assignor's writes wait
				for _, id := range ids {
					f.startWrapped(f.config(id, f.events.waiting(id)), func(c shard.Coordinator) shard.Coordinator {
						return gatedAssign(c, &held)
					})
				}
				settle(20 * time.Second)
				start := f.snapshot()
				if c := counts(start.Owners()); len(c) != 3 || spread(c) > 0 {
					t.Fatalf("before the edit: %v, want 4 each", c)
				}
				// The victim is a worker that is not the assignor, and the
				// assignor itself: both must keep their shards.
				for _, victim := range []string{notAssignor(start, ids), start.Assignor.Worker} {
					before := f.snapshot()
					was := before.Assignments[victim]
					seen := len(f.events.list())
					held.Close()
					tc.edit(f, victim)
					settle(time.Second)
					if _, ok := f.snapshot().Assignments[victim]; ok {
						t.Fatalf("%s's key readable while the assignor is held back: the edit did not take", victim)
					}
					held.Open()

					const bound = 100 * time.Millisecond
					var back shard.Assignment
					for waited := time.Duration(0); ; waited += 10 * time.Millisecond {
						s := f.snapshot()
						if a, ok := s.Assignments[victim]; ok {
							back = a
							break
						}
						if waited > bound {
							t.Fatalf("%s's assignment key not written again within %v of the edit (problems %v)", victim, bound, s.Problems)
						}
						settle(10 * time.Millisecond)
					}
					if !slices.Equal(back.Shards, was.Shards) {
						t.Errorf("%s's key written again with %v, want the shards it had, %v", victim, back.Shards, was.Shards)
					}
					settle(testLockDelay + 5*time.Second)

					if later := f.events.list()[seen:]; len(later) != 0 {
						t.Errorf("after %s's key was edited, handlers started or ended: %+v", victim, later)
					}
					after := f.snapshot()
					if !maps.Equal(after.Owners(), before.Owners()) {
						t.Errorf("ownership changed after %s's key was edited:\nbefore %v\nafter  %v", victim, before.Owners(), after.Owners())
					}
					for _, st := range after.Shards {
						if prev, _ := before.Shard(st.Shard); st.Token != prev.Token {
							t.Errorf("%s re-acquired (token %d, was %d)", st.Shard, st.Token, prev.Token)
						}
					}
					for _, sh := range f.running[victim].w.Status().Shards {
						if sh.State != worker.ShardOwned {
							t.Errorf("%s's shard %s is %s, want owned", victim, sh.Shard, sh.State)
						}
					}
				}
			})
		})
	}
}

// gatedAssign is a coordinator whose Assign waits while gate is closed: an
// assignor slow to write, so that a worker sees its key as edited.
func gatedAssign(c shard.Coordinator, gate *faults.Gate) shard.Coordinator {
	return shard.Intercept(c, func(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
		if call.Op == shard.OpAssign && !gate.Wait(ctx) {
			return context.Cause(ctx)
		}
		return invoke(ctx)
	})
}

// notAssignor is the first of ids that does not hold P/assignor in s.
func notAssignor(s shard.Snapshot, ids []string) string {
	for _, id := range ids {
		if id != s.Assignor.Worker {
			return id
		}
	}
	return ""
}

// putAssignment writes a to worker's assignment key as an operator's
// plain put would: well formed, and not the assignor's.
func (f *fleet) putAssignment(worker string, a shard.Assignment) {
	f.t.Helper()
	value, err := keycodec.EncodeAssignment(*f.snapshot().Config, a)
	if err != nil {
		f.t.Fatal(err)
	}
	f.coord.PutAssignmentValue(worker, value)
}

package lincheck

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/anishathalye/porcupine"

	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/shard"
)

// Workload shapes a recorded history. Zero fields take the defaults.
type Workload struct {
	// Clients is the number of goroutines calling the stores (default 8).
	Clients int
	// Ops is the number of calls each client makes (default 150).
	Ops int
	// Shards is how many shards the calls spread over (default 3). Fewer
	// shards mean more overlap per shard, a harder search for porcupine.
	Shards int
	// Seed makes the choice of calls repeatable (their interleaving is up
	// to the scheduler).
	Seed uint64
}

func (w Workload) withDefaults() Workload {
	if w.Clients == 0 {
		w.Clients = 8
	}
	if w.Ops == 0 {
		w.Ops = 150
	}
	if w.Shards == 0 {
		w.Shards = 3
	}
	return w
}

// How tokens are drawn: they follow the shared clock, so they rise over the
// run whatever the scheduling, with a spread that makes neighbouring calls
// race with higher and lower tokens; now and then a client offers an old
// token, as an owner waking from a pause would.
const (
	tokenEvery = 24 // clock ticks (two per call) per token step
	spread     = 4
	pauseAge   = 8
)

// Record runs the workload against stores, client i calling
// stores[i%len(stores)], and returns the history for Check. Calls that
// fail other than as stale are returned as errors, one per call (and left
// out of the history); a stale rejection whose message does not name the
// shard and token counts as such an error.
func Record(stores []offsets.Store, w Workload) ([]porcupine.Operation, []error) {
	w = w.withDefaults()
	ids := make([]shard.ID, w.Shards)
	for i := range ids {
		ids[i] = shard.ID(fmt.Sprintf("lin/shard-%03d", i))
	}
	var clock atomic.Int64
	histories := make([][]porcupine.Operation, w.Clients)
	problems := make([][]error, w.Clients)
	start := make(chan struct{}) // so the clients overlap from their first call
	var wg sync.WaitGroup
	for c := range w.Clients {
		wg.Go(func() {
			<-start
			histories[c], problems[c] = client(stores[c%len(stores)], &clock, c, w, ids)
		})
	}
	close(start)
	wg.Wait()
	var ops []porcupine.Operation
	var errs []error
	for c := range w.Clients {
		ops = append(ops, histories[c]...)
		errs = append(errs, problems[c]...)
	}
	return ops, errs
}

// client makes one goroutine's calls and records them. It reports nothing
// itself (no t.Fatal off the test goroutine).
func client(st offsets.Store, clock *atomic.Int64, c int, w Workload, ids []shard.ID) ([]porcupine.Operation, []error) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(w.Seed, uint64(c)))
	ops := make([]porcupine.Operation, 0, w.Ops)
	var errs []error
	for i := range w.Ops {
		in := Input{Shard: ids[rng.IntN(len(ids))]}
		switch r := rng.IntN(10); {
		case r < 5:
			in.Kind = Commit
			in.Offset = int64(c*w.Ops + i + 1) // unique, so a Load names its writer
		case r < 7:
			in.Kind = Fence
		default:
			in.Kind = Load
		}
		tok := uint64(clock.Load())/tokenEvery + rng.Uint64N(spread) + 1
		if rng.IntN(8) == 0 && tok > pauseAge {
			tok -= pauseAge
		}
		in.Token = shard.Token(tok)

		var out Output
		var err error
		call := clock.Add(1)
		// Let other clients run between the call's start and its effect:
		// an in-process store answers in well under a scheduler quantum,
		// and without this its clients would mostly take turns instead of
		// racing. The store's own atomic step is untouched.
		runtime.Gosched()
		switch in.Kind {
		case Commit:
			err = st.Commit(ctx, in.Shard, in.Token, in.Offset)
		case Fence:
			err = st.Fence(ctx, in.Shard, in.Token)
		default:
			out.CP, err = st.Load(ctx, in.Shard)
		}
		ret := clock.Add(1)
		switch {
		case err == nil:
		case errors.Is(err, offsets.ErrStaleToken) && in.Kind != Load:
			if want := fmt.Sprintf("shard %s: token %d ", in.Shard, in.Token); !strings.Contains(err.Error(), want) {
				errs = append(errs, fmt.Errorf("client %d: %s %s token %d: rejection %q does not name the shard and token", c, in.Kind, in.Shard, in.Token, err))
				continue
			}
			out.Stale = true
		default:
			errs = append(errs, fmt.Errorf("client %d: %s %s token %d: %w", c, in.Kind, in.Shard, in.Token, err))
			continue
		}
		ops = append(ops, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
	}
	return ops, errs
}

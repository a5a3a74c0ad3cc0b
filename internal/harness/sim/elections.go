package sim

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/shardlease/shardlease/shard"
)

// contestWindow is how close to a won election another candidate's
// refused campaign must fall for the election to count as contested.
const contestWindow = 250 * time.Millisecond

// elections checks the assignor's election and writes as the coordinator
// answered them, from the innermost interceptor of every worker
// (intercept):
//
//   - an epoch a campaign (an Acquire of shard.AssignorLock) returns is
//     won by one session only, and a new
//     epoch is above every epoch returned before;
//   - an Assign the coordinator accepted came from the session that won
//     its epoch, with no newer epoch won before the call began, and not
//     from a session destroyed before it began;
//   - an Assign sent by an assignor that woke from a pause longer than the
//     TTL is not accepted (the coordinator says shard.ErrNotAssignor):
//     its session ended while it was frozen.
//
// It also counts what the report shows: epochs, contested elections, and
// the writes accepted and refused.
type elections struct {
	c   *checker
	ttl time.Duration

	mu        sync.Mutex
	winner    map[shard.Token]shard.SessionID
	top       shard.Token
	wins      []campaign // the first return of each epoch
	losses    []campaign // campaigns that returned not held
	destroyed map[shard.SessionID]bool
	accepted  map[shard.Token]int // Assign calls accepted, by epoch

	refused, heldSent, heldRefused int64
}

type campaign struct {
	at      time.Duration
	session shard.SessionID
}

func newElections(c *checker, ttl time.Duration) *elections {
	return &elections{c: c, ttl: ttl, winner: map[shard.Token]shard.SessionID{},
		destroyed: map[shard.SessionID]bool{}, accepted: map[shard.Token]int{}}
}

func (el *elections) campaigned(id shard.SessionID, epoch shard.Token, held bool) {
	el.mu.Lock()
	defer el.mu.Unlock()
	at := el.c.elapsed()
	if !held {
		el.losses = append(el.losses, campaign{at, id})
		return
	}
	switch prev, seen := el.winner[epoch]; {
	case seen && prev != id:
		el.c.violate("assignor epoch %d returned to session %s, and before to %s", epoch, id, prev)
	case seen:
		return // the holder campaigned again and learnt its epoch
	case epoch <= el.top:
		el.c.violate("session %s won assignor epoch %d, not above epoch %d won before by session %s", id, epoch, el.top, el.winner[el.top])
	}
	el.winner[epoch] = id
	el.top = max(el.top, epoch)
	el.wins = append(el.wins, campaign{at, id})
}

// before notes, as an Assign begins, what it must be judged against.
func (el *elections) before(id shard.SessionID) (top shard.Token, destroyed bool) {
	el.mu.Lock()
	defer el.mu.Unlock()
	return el.top, el.destroyed[id]
}

func (el *elections) assigned(worker string, id shard.SessionID, epoch, top shard.Token, destroyed bool, keys int, err error) {
	el.mu.Lock()
	defer el.mu.Unlock()
	if isRefused(err) {
		el.refused++
	}
	if err != nil || keys == 0 {
		return
	}
	el.accepted[epoch]++
	switch {
	case el.winner[epoch] != id:
		el.c.violate("the coordinator accepted %s's Assign at epoch %d from session %s; that epoch was won by %q", worker, epoch, id, el.winner[epoch])
	case epoch < top:
		el.c.violate("the coordinator accepted %s's Assign at epoch %d from session %s after epoch %d was won", worker, epoch, id, top)
	case destroyed:
		el.c.violate("the coordinator accepted %s's Assign at epoch %d from session %s, destroyed before it was sent", worker, epoch, id)
	}
}

func (el *elections) destroy(id shard.SessionID) {
	el.mu.Lock()
	el.destroyed[id] = true
	el.mu.Unlock()
}

// held judges the write an assignor sent on waking from a pause.
func (el *elections) held(worker string, id shard.SessionID, epoch shard.Token, frozen time.Duration, err error) {
	if errors.Is(err, shard.ErrUnavailable) {
		return // another fault cut it off: the write never left
	}
	el.mu.Lock()
	defer el.mu.Unlock()
	el.heldSent++
	if isRefused(err) {
		el.heldRefused++
	}
	if frozen > el.ttl && err == nil {
		el.c.violate("%s woke %v after freezing (TTL %v) and the coordinator accepted its Assign at epoch %d from session %s",
			worker, frozen, el.ttl, epoch, id)
	}
}

// contested counts the elections another session's refused campaign fell
// within contestWindow of: two candidates campaigned at once.
// It returns how many epochs were won, and when each contested one was.
func (el *elections) contested() (wins int, contested []time.Duration) {
	el.mu.Lock()
	defer el.mu.Unlock()
	for _, w := range el.wins {
		for _, l := range el.losses {
			if l.session != w.session && l.at >= w.at-contestWindow && l.at <= w.at+contestWindow {
				contested = append(contested, w.at)
				break
			}
		}
	}
	return len(el.wins), contested
}

// intercept is the innermost interceptor of worker's coordinator: it
// tells elections what the coordinator itself answered to its campaigns
// (an Acquire of shard.AssignorLock) and its Assign calls.
func (el *elections) intercept(worker string) shard.Interceptor {
	return func(ctx context.Context, call *shard.Call, invoke func(context.Context) error) error {
		switch {
		case call.Op == shard.OpAcquire && slices.Contains(call.Locks, shard.AssignorLock):
			err := invoke(ctx)
			if err == nil {
				var epoch shard.Token
				for _, g := range call.Grants {
					if g.Lock == shard.AssignorLock {
						epoch = g.Token
					}
				}
				el.campaigned(call.Session, epoch, epoch != 0)
			}
			return err
		case call.Op == shard.OpAssign:
			top, destroyed := el.before(call.Session)
			err := invoke(ctx)
			el.assigned(worker, call.Session, call.Epoch, top, destroyed, call.Keys, err)
			return err
		}
		return invoke(ctx)
	}
}

func (el *elections) counts() (accepted, refused, heldSent, heldRefused int64) {
	el.mu.Lock()
	defer el.mu.Unlock()
	for _, n := range el.accepted {
		accepted += int64(n)
	}
	return accepted, el.refused, el.heldSent, el.heldRefused
}

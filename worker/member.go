package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/lease"
	"github.com/shardlease/shardlease/shard"
)

// guardMember follows the worker's own member key (shard.Follow) for the
// whole term: blocking queries on one key, not woken by other workers'
// writes.
// The key stops being what the term wrote in three ways, and each is acted
// on within one watch round:
//
//   - Its session was ended by someone else: an operator destroyed it, Serf
//     marked the node failed, its check turned critical. Consul then clears
//     the key's session. The worker confirms with a renewal and steps down
//     at once, instead of at its next renewal or its local deadline.
//   - An operator deleted the key, or overwrote it with a plain PUT (which
//     keeps the session): the assignor stops counting the worker, which
//     would otherwise stay active and own nothing until restarted. The
//     worker writes its registration again, keeping an operator's drain.
//   - Another session holds it: only after this term's session ended and
//     another worker took the ID, so the renewal check ends the term.
//
// A write that fails is tried again after Follow's backoff, on the key as
// it is then. It runs until ctx ends: the term's end, or the start of a
// stop, which writes the key itself (loop.stopGuard).
func (w *Worker) guardMember(ctx context.Context, l *lease.Lease, m shard.Member) {
	watch := func(ctx context.Context, after uint64) (shard.MemberKey, error) {
		return w.cfg.Coordinator.Members().Watch(ctx, w.cfg.ID, after)
	}
	_ = shard.Follow(ctx, watch, shard.FollowOptions{Jitter: w.jitter.UpTo}, func(k shard.MemberKey) (time.Time, error) {
		if k.Exists && k.Problem == "" && k.Member.Session == l.Session() && sameRegistration(k.Member.Member, m) {
			w.noteDraining(l, k.Member.Draining)
			w.cordon.Store(k.Member.Cordon)
			return time.Time{}, nil
		}
		if !w.sessionAlive(l) || ctx.Err() != nil {
			return time.Time{}, shard.ErrStopFollowing
		}
		if k.Exists && k.Problem == "" {
			m.Draining = k.Member.Draining // an operator's drain request stays
			m.Cordon = k.Member.Cordon     // and so does a cordon
		}
		why := describeMemberKey(k, l.Session())
		jctx, cancel := context.WithTimeout(ctx, w.cfg.Policy.RenewEvery)
		err := w.cfg.Coordinator.Members().Join(jctx, l.Session(), m)
		cancel()
		if errors.Is(err, shard.ErrSessionInvalid) {
			l.End(fmt.Errorf("%w: %w", ErrLost, err)) // ended meanwhile: the term is over
			return time.Time{}, shard.ErrStopFollowing
		}
		if err != nil {
			w.log.Warn("the member key was changed under this worker and writing it again failed; retrying",
				zap.String("key", why), zap.Error(err))
			return time.Time{}, shard.ErrFollowAgain // look again at once (after the backoff)
		}
		w.log.Warn("the member key was changed under this live worker; registered again", zap.String("key", why))
		return time.Time{}, nil
	})
}

// sessionAlive renews the term's session once to tell whether it still
// exists. A session that is gone ends the term at once (the caller
// returns); any other failure is left to the renewal loop and counts as
// alive.
func (w *Worker) sessionAlive(l *lease.Lease) bool {
	if err := l.Renew(); errors.Is(err, shard.ErrSessionInvalid) {
		l.End(fmt.Errorf("%w: session %s was ended by the coordinator before its TTL (destroyed, node failed or check critical), "+
			"seen on the worker's member key: %w", ErrLost, l.Session(), err))
		return false
	}
	return l.Context().Err() == nil
}

// sameRegistration compares what the worker wrote, leaving out Draining
// and Cordon, which belong to operators, and RejoinUntil, which the worker
// writes only as it stops.
func sameRegistration(got, want shard.Member) bool {
	return got.ID == want.ID && got.Address == want.Address && got.Version == want.Version && got.Protocol == want.Protocol &&
		got.Weight == want.Weight && got.Started.Equal(want.Started) && got.Zone == want.Zone && maps.Equal(got.Labels, want.Labels) &&
		got.StandbyCapable == want.StandbyCapable
}

func describeMemberKey(k shard.MemberKey, session shard.SessionID) string {
	switch {
	case !k.Exists:
		return "deleted"
	case k.Problem != "":
		return "overwritten with a value that is not a member: " + k.Problem
	case k.Member.Session == "":
		return "held by no session"
	case k.Member.Session != session:
		return fmt.Sprintf("held by another session %s", k.Member.Session)
	default:
		return fmt.Sprintf("overwritten: %+v", k.Member.Member)
	}
}

// noteDraining records an operator's drain request (or its withdrawal) seen
// on this worker's own member key. The assignor gives a draining member no
// shards; remembering the flag keeps the request across a rejoin and names
// the hand-offs "drain".
func (w *Worker) noteDraining(l *lease.Lease, on bool) {
	if w.draining.Swap(on) == on {
		return
	}
	if on {
		w.log.Info("an operator asked this worker to drain: handing off every shard", zap.String("session", string(l.Session())))
	} else {
		w.log.Info("drain withdrawn: taking a share of shards again", zap.String("session", string(l.Session())))
	}
}

// keptCordon is the cordon to join with: the one on the worker's member key
// as it is now (left by an earlier run of this worker ID, or set by an
// operator meanwhile), or, if the key cannot be read, the last one seen.
// A cordon is an operator's and outlives restarts.
func (w *Worker) keptCordon(l *lease.Lease) *shard.Mark {
	ctx, cancel := context.WithTimeout(l.Context(), w.cfg.Policy.RenewEvery)
	defer cancel()
	k, err := w.cfg.Coordinator.Members().Watch(ctx, w.cfg.ID, 0)
	if err != nil || !k.Exists || k.Problem != "" {
		return w.cordon.Load()
	}
	w.cordon.Store(k.Member.Cordon)
	return k.Member.Cordon
}

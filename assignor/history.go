package assignor

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/history"
	"github.com/shardlease/shardlease/shard"
)

// historyEvery is the least time between two writes of P/history, so a
// burst of moves (a join, a zone of crashes) costs one write a second at
// most, and a quiet fleet none.
const historyEvery = time.Second

// historyRecheck is how often an assignor that found P/history
// unreadable (another format, an edit) reads it again: an operator who
// deletes it has the history recorded again within this.
const historyRecheck = 30 * time.Second

// recording is one term's share of the ownership history: the recorder,
// seeded from P/history at the term's first listing, and when it last
// wrote.
type recording struct {
	rec     history.Recorder
	refused time.Time // when the stored log was found not this build's: never overwritten
	waiting bool      // logged that a live member lacks shard.StepHistory
	wrote   time.Time
}

// record observes snap for the ownership history and writes P/history
// when it has changes, at most once per historyEvery and only while every
// live member speaks shard.StepHistory (release 0.1.0 lists the key as a
// foreign one). It returns when to be called again (wake, or sooner when
// changes wait for the spacing), and an error only when the coordinator
// refused the write because this assignor was deposed. Anything else that
// fails costs the history, never the assignments: it is logged and tried
// again.
func (a *Assignor) record(ctx context.Context, id shard.SessionID, epoch shard.Token, snap shard.Snapshot, r *recording,
	wake time.Time, log *zap.Logger) (time.Time, error) {
	now := time.Now()
	if !r.rec.Seeded() {
		if again := r.refused.Add(historyRecheck); !r.refused.IsZero() && now.Before(again) {
			return earliest(wake, again), nil
		}
		value, _, err := a.cfg.Coordinator.History().Read(ctx)
		if err != nil {
			log.Warn("reading the ownership history failed; trying again", zap.Error(err))
			return earliest(wake, now.Add(historyEvery)), nil
		}
		if err := r.rec.Seed(value); err != nil {
			if r.refused.IsZero() {
				log.Warn("not recording the ownership history: P/history is not this build's log, and is left as it is (delete it to start a new one)", zap.Error(err))
			}
			r.refused = now
			return earliest(wake, now.Add(historyRecheck)), nil
		}
		if !r.refused.IsZero() {
			log.Info("recording the ownership history again: P/history was replaced")
			r.refused = time.Time{}
		}
	}
	r.rec.Observe(snap, now)
	if !r.rec.Pending() {
		return wake, nil
	}
	if !snap.AllSpeak(shard.StepHistory) {
		if !r.waiting {
			log.Info("the ownership history waits: a live worker does not speak its protocol step", zap.String("step", shard.StepHistory))
			r.waiting = true
		}
		return wake, nil
	}
	r.waiting = false
	if next := r.wrote.Add(historyEvery); now.Before(next) {
		return earliest(wake, next), nil
	}
	value, err := r.rec.Encode()
	if err != nil {
		log.Error("cannot encode the ownership history", zap.Error(err))
		return wake, nil
	}
	wctx, cancel := context.WithTimeout(ctx, a.cfg.Lease.StepDownAfter())
	defer cancel()
	r.wrote = now
	err = a.cfg.Coordinator.History().Record(wctx, id, epoch, value)
	switch {
	case errors.Is(err, shard.ErrNotAssignor):
		return time.Time{}, err
	case err != nil && ctx.Err() == nil:
		log.Warn("writing the ownership history failed; trying again", zap.Error(err))
		return earliest(wake, now.Add(historyEvery)), nil
	case err != nil:
		return wake, nil
	}
	r.rec.Written()
	return wake, nil
}

// earliest is the earlier of two wake times, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

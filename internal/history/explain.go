package history

import (
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Tenure is one worker's hold of a shard at one token, as a log tells it.
type Tenure struct {
	Shard  shard.ID
	Token  shard.Token
	Worker string
	// Began is the acquisition; nil when the log does not have it (dropped
	// as old, or the tenure was shorter than a listing).
	Began *Change
	// Ended is the change that ended it (a release, an expiry, or the next
	// acquisition when the end fell between two listings); nil while the
	// log knows no end.
	Ended *Change
}

// Verdict is whether a tenure was in force at a moment, as far as a log
// can tell.
type Verdict int

// The verdicts.
const (
	// Unknown: the log cannot tell (it lacks the tenure's start, or the
	// moment falls between the last listing that showed it held and the
	// one that showed it ended).
	Unknown Verdict = iota
	InForce
	NotInForce
)

// At says whether the tenure was in force at t. It began when its worker
// took the lock (the worker's clock); it ended after the last listing
// that showed it held (Ended.Seen) and no later than the listing that
// showed it ended, or the successor's acquisition when that is earlier
// (the successor's clock). Between those two it is Unknown: clocks of
// different machines, and the listings' spacing, bound what a log knows.
func (t Tenure) At(at time.Time) Verdict {
	if t.Ended != nil {
		endBy := t.Ended.At
		if t.Ended.Kind == Acquired && !t.Ended.Since.IsZero() && t.Ended.Since.Before(endBy) {
			endBy = t.Ended.Since
		}
		if !at.Before(endBy) {
			return NotInForce
		}
	}
	switch {
	case t.Began == nil:
		return Unknown
	case at.Before(t.Began.When()):
		return NotInForce
	case t.Ended == nil:
		return InForce
	case !t.Ended.Seen.IsZero() && at.Before(t.Ended.Seen):
		return InForce
	}
	return Unknown
}

// Explanation is what a log says about one token of one shard.
type Explanation struct {
	// Tenure is the tenure at the token; its Began is nil when the log
	// has no acquisition at that token.
	Tenure Tenure
	// Before and After are the shard's tenures just below and above the
	// token in the log (nil: none), so a token the log lacks is placed
	// between the owners that bracket it.
	Before, After *Tenure
	// Window is true when the log has no tenure at the token and the
	// token is older than every listing it keeps (or it keeps none): the
	// acquisition may have been dropped as old.
	Window bool
}

// Explain tells which worker held shard id at token, when its tenure
// began and ended, and the tenures around it.
func (l Log) Explain(id shard.ID, token shard.Token) Explanation {
	ts := l.Tenures(id)
	e := Explanation{Tenure: Tenure{Shard: id, Token: token}}
	for i := range ts {
		switch t := &ts[i]; {
		case t.Token == token:
			e.Tenure = *t
		case t.Token < token:
			e.Before = t
		case t.Token > token && e.After == nil:
			e.After = t
		}
	}
	found := e.Tenure.Began != nil || e.Tenure.Ended != nil
	e.Window = !found && (len(l.Changes) == 0 || l.older(token))
	return e
}

// Tenures returns shard id's tenures in the log, by token.
func (l Log) Tenures(id shard.ID) []Tenure {
	var ts []Tenure
	open := -1 // index in ts of the tenure without an end yet
	for _, c := range l.Of(id) {
		c := c
		switch c.Kind {
		case Acquired:
			if open >= 0 {
				ts[open].Ended = &c
			}
			ts = append(ts, Tenure{Shard: id, Token: c.Token, Worker: c.Worker, Began: &c})
			open = len(ts) - 1
		default:
			if open >= 0 && ts[open].Token == c.Token {
				ts[open].Ended = &c
				open = -1
				continue
			}
			ts = append(ts, Tenure{Shard: id, Token: c.Token, Worker: c.Worker, Ended: &c})
			open = -1
		}
	}
	return ts
}

// older reports whether token may be older than every listing the log
// keeps: of an earlier generation than its oldest change's token, or of
// the same one with an index at most its oldest listing's.
func (l Log) older(token shard.Token) bool {
	first := l.Changes[0]
	for _, c := range l.Changes {
		if c.Token != 0 { // an unseen tenure's is 0: no generation
			if g := c.Token.Generation(); token.Generation() != g {
				return token.Generation() < g
			}
			break
		}
	}
	return token.Index() <= first.Index
}

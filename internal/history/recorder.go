package history

import (
	"time"

	"github.com/shardlease/shardlease/shard"
)

// Recorder is the assignor's side of the log: it is seeded with the
// stored log, observes every listing, and says when the log has changes
// to write. It is not safe for concurrent use.
type Recorder struct {
	log    Log
	prev   *shard.Snapshot
	prevAt time.Time // when prev was taken (for the first listing, the log's AsOfAt)
	seeded bool
	dirty  bool
}

// Seed starts the recorder from the stored value. A value that Decode
// refuses leaves the recorder unseeded (it records nothing, so a newer
// release's log is never overwritten) and is returned.
func (r *Recorder) Seed(value []byte) error {
	l, err := Decode(value)
	if err != nil {
		return err
	}
	r.log, r.seeded = l, true
	return nil
}

// Seeded reports whether Seed succeeded.
func (r *Recorder) Seeded() bool { return r.seeded }

// Observe records the changes between the last listing (for the first,
// the stored log's state) and s, stamped at, and returns them. The first
// listing after Seed records what changed while no assignor was watching:
// an acquisition whose token is at most the stored log's AsOf and that is
// not in the log is not recorded again (it was seen, then dropped as old).
func (r *Recorder) Observe(s shard.Snapshot, at time.Time) []Change {
	if !r.seeded {
		return nil
	}
	var cs []Change
	if r.prev == nil {
		cs, r.prevAt = r.since(s, at), r.log.AsOfAt
	} else {
		cs = Changes(r.prev, s, at)
	}
	for i := range cs {
		cs[i].Seen = r.prevAt // every tenure that ended was still held then
	}
	r.prev, r.prevAt = &s, at
	r.log.AsOf, r.log.AsOfAt = s.Index, at
	if len(cs) > 0 {
		r.log.Append(cs)
		r.dirty = true
	}
	return cs
}

// Pending reports whether changes were recorded since Written was last
// called. (AsOf alone moving is not one: the log is written when it has
// something to say, and its AsOf then covers every listing seen.)
func (r *Recorder) Pending() bool { return r.dirty }

// Encode is the log to write.
func (r *Recorder) Encode() ([]byte, error) { return r.log.Encode() }

// Written says the log as last encoded was stored.
func (r *Recorder) Written() { r.dirty = false }

// Log is the log as recorded so far.
func (r *Recorder) Log() Log { return r.log }

// since is the first listing's changes after Seed: s compared with the
// stored log's state. A shard held at the token the log last recorded
// for it has not changed; an acquisition the log lacks whose token is at
// most the log's AsOf was recorded once and dropped as old.
func (r *Recorder) since(s shard.Snapshot, at time.Time) []Change {
	prev := r.log.state()
	asOf := prev.Index
	if asOf > s.Index {
		asOf = 0 // a coordinator rebuilt at lower indexes: its tokens are not comparable with AsOf
	}
	recordedAt := make(map[shard.ID]shard.Token, len(prev.Shards))
	for _, st := range prev.Shards {
		recordedAt[st.Shard] = st.Token
	}
	var cs []Change
	for _, c := range Changes(&prev, s, at) {
		if c.Kind == Acquired {
			tok, known := recordedAt[c.Shard]
			if known && tok == c.Token {
				continue
			}
			if !known && asOf != 0 && c.Token.Index() <= asOf {
				continue
			}
		}
		cs = append(cs, c)
	}
	return cs
}

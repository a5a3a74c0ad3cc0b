package pipeline

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// KeyProof is what the end of a run found for the keyed events, reading
// the stream and PostgreSQL: each applied once, and each key's applied in
// the key's own order, across partitions (a reshard moves a key from a
// parent's partition to a child's).
type KeyProof struct {
	// Keys and Events are the keys and the keyed events in the stream.
	Keys, Events int64
	// Applied is the number of distinct keyed events with an effect;
	// Duplicates the effect rows beyond one per event; Gaps the events
	// without one; Foreign the effects of keyed events the stream does
	// not have.
	Applied, Duplicates, Gaps, Foreign int64
	// Pairs counts the pairs of a key's applied events next to each other
	// in its sequence (ascending). OutOfOrder counts those whose later
	// event was written by a transaction that began writing before the
	// earlier one's had committed: a reader could have seen the later
	// event without the earlier. (Two events of one transaction commit
	// together, in order.)
	Pairs, OutOfOrder int64
	// Crossed counts the pairs whose events are on different partitions:
	// a key's last event before a switch and its first after; CrossedKeys
	// the keys with such a pair, and CrossedOutOfOrder the pairs out of
	// order.
	Crossed, CrossedKeys, CrossedOutOfOrder int64
}

// OK reports whether every keyed event was applied exactly once, each
// key's in order.
func (p KeyProof) OK() bool {
	return p.Duplicates == 0 && p.Gaps == 0 && p.Foreign == 0 && p.OutOfOrder == 0
}

// ProveKeys reads the keyed events of partitions 0…partitions−1 back from
// the stream and compares them with the effects: the events applied, and
// for each key the order its transactions committed in, told by
// PostgreSQL itself: the snapshot each transaction's first statement ran
// with (Tables.txs) shows which transactions had committed before it.
func (h *Handler) ProveKeys(ctx context.Context, partitions int) (KeyProof, error) {
	st, err := h.JS.Stream(ctx, Stream)
	if err != nil {
		return KeyProof{}, fmt.Errorf("pipeline: key proof: %w", err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(SubjectPrefix+">"))
	if err != nil {
		return KeyProof{}, fmt.Errorf("pipeline: key proof: %w", err)
	}
	type event struct{ key, seq int64 }
	published := map[event]bool{}
	keys := map[int64]bool{}
	for p := range partitions {
		err := h.read(ctx, p, int64(info.State.Subjects[Subject(p)]), func(ev Event, _ uint64) {
			if ev.Key != 0 {
				published[event{ev.Key, ev.KeySeq}] = true
				keys[ev.Key] = true
			}
		})
		if err != nil {
			return KeyProof{}, fmt.Errorf("pipeline: key proof: %w", err)
		}
	}
	out := KeyProof{Keys: int64(len(keys)), Events: int64(len(published))}

	rows, err := h.Pool.Query(ctx, `SELECT key_id, key_seq, count(*) FROM `+h.Tables.effects().Sanitize()+` WHERE key_id <> 0 GROUP BY key_id, key_seq`)
	if err != nil {
		return out, fmt.Errorf("pipeline: key proof: reading the effects: %w", err)
	}
	for rows.Next() {
		var e event
		var n int64
		if err := rows.Scan(&e.key, &e.seq, &n); err != nil {
			rows.Close()
			return out, err
		}
		out.Duplicates += n - 1
		if published[e] {
			out.Applied++
		} else {
			out.Foreign++
		}
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("pipeline: key proof: reading the effects: %w", err)
	}
	out.Gaps = out.Events - out.Applied

	// Each applied event of a key beside the one before it in the key's
	// sequence: in order if one transaction wrote both, or if the earlier
	// one's had committed when the later one's first statement ran.
	err = h.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE NOT seen),
  count(*) FILTER (WHERE crossed), count(DISTINCT key_id) FILTER (WHERE crossed), count(*) FILTER (WHERE crossed AND NOT seen)
FROM (SELECT e.key_id, e.key_seq, lag(e.key_seq) OVER w AS prev_seq,
        e.partition <> lag(e.partition) OVER w AS crossed,
        e.xid = lag(e.xid) OVER w OR coalesce(pg_visible_in_snapshot(lag(e.xid) OVER w, t.snap), false) AS seen
      FROM `+h.Tables.effects().Sanitize()+` e LEFT JOIN `+h.Tables.txs().Sanitize()+` t ON t.xid = e.xid
      WHERE e.key_id <> 0
      WINDOW w AS (PARTITION BY e.key_id ORDER BY e.key_seq, e.xid)) pairs
WHERE key_seq > prev_seq`).Scan(&out.Pairs, &out.OutOfOrder, &out.Crossed, &out.CrossedKeys, &out.CrossedOutOfOrder)
	if err != nil {
		return out, fmt.Errorf("pipeline: key proof: the order of each key's effects: %w", err)
	}
	return out, nil
}

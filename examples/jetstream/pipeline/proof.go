package pipeline

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shardlease/shardlease/shard"
)

// Partition is what the end of a run found for one partition, reading the
// stream and PostgreSQL (not the handlers' own counts).
type Partition struct {
	Partition int
	Shard     shard.ID
	// Published is the number of events on the partition's subject in the
	// stream (its marker included); LastSeq the stream sequence of its
	// last one. Marker says that one is a marker: the producer left the
	// partition at a switch of layouts.
	Published int64
	LastSeq   uint64
	Marker    bool
	// Applied is the number of distinct events with an effect row;
	// Effects the number of effect rows.
	Applied, Effects int64
	// Duplicates = Effects − Applied: events applied more than once.
	Duplicates int64
	// Gaps: events published whose effect is missing. Foreign: effect rows
	// of events the stream never had (n outside 1…Published).
	Gaps, Foreign int64
	// Offset is the shard's committed offset, which should be LastSeq.
	Offset int64
	// Refused is the transactions of superseded owners on this shard that
	// did not commit, from Stats (set by the caller).
	Refused int64
}

// Behind reports whether the committed offset is not at the partition's
// last event.
func (r Partition) Behind() bool { return r.Offset != int64(r.LastSeq) }

// OK reports whether every event of the partition was applied exactly once
// and its offset is at its last event.
func (r Partition) OK() bool {
	return r.Duplicates == 0 && r.Gaps == 0 && r.Foreign == 0 && !r.Behind()
}

// Proof is the whole run's. Markers counts the partitions that end with
// a marker.
type Proof struct {
	Partitions                                   []Partition
	Published, Applied, Duplicates, Gaps, Behind int64
	Foreign, Refused, Markers                    int64
}

// SetRefused fills the proof's refused counts from the handlers' stats.
func (p *Proof) SetRefused(by map[shard.ID]int64) {
	p.Refused = 0
	for i := range p.Partitions {
		p.Partitions[i].Refused = by[p.Partitions[i].Shard]
		p.Refused += p.Partitions[i].Refused
	}
}

// OK reports whether every event was applied exactly once and every
// offset is at its partition's last event.
func (p Proof) OK() bool {
	return p.Duplicates == 0 && p.Gaps == 0 && p.Foreign == 0 && p.Behind == 0
}

// Prove reads the stream and the effects and offsets in PostgreSQL for
// the given shards (shards[i] consumes partition i).
func (h *Handler) Prove(ctx context.Context, shards []shard.ID) (Proof, error) {
	st, err := h.JS.Stream(ctx, Stream)
	if err != nil {
		return Proof{}, fmt.Errorf("pipeline: proof: stream %s: %w", Stream, err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(SubjectPrefix+">"))
	if err != nil {
		return Proof{}, fmt.Errorf("pipeline: proof: stream %s's subjects: %w", Stream, err)
	}
	type agg struct{ rows, distinct, lo, hi int64 }
	found := map[int]agg{}
	rows, err := h.Pool.Query(ctx, `SELECT partition, count(*), count(DISTINCT n), min(n), max(n) FROM `+h.Tables.effects().Sanitize()+` GROUP BY partition`)
	if err != nil {
		return Proof{}, fmt.Errorf("pipeline: proof: reading the effects: %w", err)
	}
	for rows.Next() {
		var p int
		var a agg
		if err := rows.Scan(&p, &a.rows, &a.distinct, &a.lo, &a.hi); err != nil {
			rows.Close()
			return Proof{}, err
		}
		found[p] = a
	}
	if err := rows.Err(); err != nil {
		return Proof{}, fmt.Errorf("pipeline: proof: reading the effects: %w", err)
	}
	var out Proof
	for p, s := range shards {
		r := Partition{Partition: p, Shard: s, Published: int64(info.State.Subjects[Subject(p)])}
		if r.Published > 0 {
			last, err := st.GetLastMsgForSubject(ctx, Subject(p))
			if err != nil {
				return Proof{}, fmt.Errorf("pipeline: proof: last message of %s: %w", Subject(p), err)
			}
			r.LastSeq = last.Sequence
			ev, err := decode(last.Data)
			if err != nil {
				return Proof{}, fmt.Errorf("pipeline: proof: last message of %s: %w", Subject(p), err)
			}
			r.Marker = ev.Marker
		}
		a := found[p]
		r.Effects, r.Applied = a.rows, a.distinct
		r.Duplicates = a.rows - a.distinct
		if a.rows > 0 && (a.lo < 1 || a.hi > r.Published) {
			// Which distinct events are outside 1…Published takes a query.
			if err := h.Pool.QueryRow(ctx, `SELECT count(DISTINCT n) FROM `+h.Tables.effects().Sanitize()+
				` WHERE partition = $1 AND (n < 1 OR n > $2)`, p, r.Published).Scan(&r.Foreign); err != nil {
				return Proof{}, err
			}
		}
		r.Gaps = r.Published - (r.Applied - r.Foreign)
		if r.Offset, err = h.position(ctx, s); err != nil {
			return Proof{}, err
		}
		out.Partitions = append(out.Partitions, r)
		out.Published += r.Published
		out.Applied += r.Applied
		out.Duplicates += r.Duplicates
		out.Gaps += r.Gaps
		out.Foreign += r.Foreign
		if r.Behind() {
			out.Behind++
		}
		if r.Marker {
			out.Markers++
		}
	}
	var strays []int
	for p := range found {
		if p < 0 || p >= len(shards) {
			strays = append(strays, p)
		}
	}
	if len(strays) > 0 {
		slices.Sort(strays)
		return out, fmt.Errorf("pipeline: proof: effect rows of partitions the run does not have (it has 0 to %d): %v", len(shards)-1, strays)
	}
	return out, nil
}

// Print writes the proof as a table, one line per partition (every
// partition when all is set, else only those with a problem and a total).
func (p Proof) Print(w io.Writer, all bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "partition\tshard\tpublished\tapplied\tduplicates\tgaps\tstale refused\toffset = last seq\t")
	for _, r := range p.Partitions {
		if !all && r.OK() {
			continue
		}
		mark := "yes"
		if r.Marker {
			mark = "yes, its marker"
		}
		if r.Behind() {
			mark = fmt.Sprintf("NO (%d ≠ %d)", r.Offset, r.LastSeq)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", Subject(r.Partition), r.Shard, r.Published, r.Applied, r.Duplicates, r.Gaps, r.Refused, mark)
	}
	fmt.Fprintf(tw, "all %d\t\t%d\t%d\t%d\t%d\t%d\t%d behind\t\n", len(p.Partitions), p.Published, p.Applied, p.Duplicates, p.Gaps, p.Refused, p.Behind)
	return tw.Flush()
}

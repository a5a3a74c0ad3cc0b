package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// window is how many rounds of publishes a producer keeps in flight.
const window = 8

// Produce publishes events 1…perPartition to every partition, in rounds
// of one event per partition, one round every pace (0: as fast as the
// server acknowledges). Up to window rounds are in flight at once; when
// Produce returns without error every event is stored in the stream, in
// order per partition (each publish names the stream, and a partition's
// events leave on one connection in order). after, if set, is called
// after each round is acknowledged with the rounds acknowledged.
func Produce(ctx context.Context, js jetstream.JetStream, partitions int, perPartition int64, pace time.Duration, after func(round int64)) error {
	return ProduceFrom(ctx, js, partitions, 1, perPartition, pace, after)
}

// ProduceFrom is Produce of events first…last.
func ProduceFrom(ctx context.Context, js jetstream.JetStream, partitions int, first, last int64, pace time.Duration, after func(round int64)) error {
	if partitions < 1 || first < 1 {
		return fmt.Errorf("pipeline: produce events %d…%d to each of %d partitions: want at least one partition, events from 1", first, last, partitions)
	}
	began := time.Now()
	f := flight{after: after}
	for n := first; n <= last; n++ {
		acks := make([]jetstream.PubAckFuture, partitions)
		for p := range partitions {
			a, err := publish(js, Event{Partition: p, N: n, PublishedNs: time.Now().UnixNano()})
			if err != nil {
				return err
			}
			acks[p] = a
		}
		if err := f.add(ctx, n, acks); err != nil {
			return err
		}
		if pace > 0 && !Sleep(ctx, time.Until(began.Add(time.Duration(n-first+1)*pace))) {
			return context.Cause(ctx)
		}
	}
	return f.drain(ctx)
}

// publish sends e to its partition's subject, naming the stream.
func publish(js jetstream.JetStream, e Event) (jetstream.PubAckFuture, error) {
	a, err := js.PublishAsync(Subject(e.Partition), encode(e), jetstream.WithExpectStream(Stream))
	if err != nil {
		return nil, fmt.Errorf("pipeline: publishing event %d of partition %d: %w", e.N, e.Partition, err)
	}
	return a, nil
}

// flight is the rounds published but not yet acknowledged, oldest first:
// at most window of them.
type flight struct {
	rounds []pending
	after  func(round int64) // called as each round is acknowledged
}

type pending struct {
	round int64
	acks  []jetstream.PubAckFuture
}

// add puts round's publishes in flight, first waiting for the oldest
// round when window are.
func (f *flight) add(ctx context.Context, round int64, acks []jetstream.PubAckFuture) error {
	if len(f.rounds) == window {
		if err := f.ack(ctx); err != nil {
			return err
		}
	}
	f.rounds = append(f.rounds, pending{round: round, acks: acks})
	return nil
}

// drain waits for every round in flight.
func (f *flight) drain(ctx context.Context) error {
	for len(f.rounds) > 0 {
		if err := f.ack(ctx); err != nil {
			return err
		}
	}
	return nil
}

// ack waits for the oldest round in flight.
func (f *flight) ack(ctx context.Context) error {
	r := f.rounds[0]
	if err := acked(ctx, r.round, r.acks); err != nil {
		return err
	}
	f.rounds = f.rounds[1:]
	if f.after != nil {
		f.after(r.round)
	}
	return nil
}

// acked waits until every publish of round is stored.
func acked(ctx context.Context, round int64, acks []jetstream.PubAckFuture) error {
	for _, a := range acks {
		select {
		case <-a.Ok():
		case err := <-a.Err():
			return fmt.Errorf("pipeline: round %d's message to %s was not stored: %w", round, a.Msg().Subject, err)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// Sleep waits for d or until ctx ends; it reports whether d passed (a d
// of 0 or less passes at once).
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

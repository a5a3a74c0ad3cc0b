package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// window is how many rounds of publishes Produce keeps in flight.
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
	inFlight := make([][]jetstream.PubAckFuture, 0, window)
	wait := func(round int64, acks []jetstream.PubAckFuture) error {
		for p, f := range acks {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return fmt.Errorf("pipeline: event %d of partition %d was not stored: %w", round, p, err)
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		if after != nil {
			after(round)
		}
		return nil
	}
	for n := first; n <= last; n++ {
		if len(inFlight) == window {
			if err := wait(n-window, inFlight[0]); err != nil {
				return err
			}
			inFlight = inFlight[1:]
		}
		acks := make([]jetstream.PubAckFuture, partitions)
		for p := range partitions {
			f, err := js.PublishAsync(Subject(p), encode(Event{Partition: p, N: n, PublishedNs: time.Now().UnixNano()}),
				jetstream.WithExpectStream(Stream))
			if err != nil {
				return fmt.Errorf("pipeline: publishing event %d of partition %d: %w", n, p, err)
			}
			acks[p] = f
		}
		inFlight = append(inFlight, acks)
		if pace > 0 {
			if !Sleep(ctx, time.Until(began.Add(time.Duration(n-first+1)*pace))) {
				return context.Cause(ctx)
			}
		}
	}
	for i, acks := range inFlight {
		if err := wait(last-int64(len(inFlight)-1-i), acks); err != nil {
			return err
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

package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Produce publishes events 1…perPartition to every partition, in rounds
// of one event per partition, one round every pace (0: as fast as the
// server acknowledges). A round's publishes are in flight together and
// acknowledged before the next round starts, so when Produce returns
// without error every event is stored in the stream, in order per
// partition. after, if set, is called after each round with the rounds
// done.
func Produce(ctx context.Context, js jetstream.JetStream, partitions int, perPartition int64, pace time.Duration, after func(round int64)) error {
	if partitions < 1 || perPartition < 0 {
		return fmt.Errorf("pipeline: produce %d events to each of %d partitions: want at least one partition and no negative count", perPartition, partitions)
	}
	began := time.Now()
	acks := make([]jetstream.PubAckFuture, partitions)
	for n := int64(1); n <= perPartition; n++ {
		for p := range partitions {
			f, err := js.PublishAsync(Subject(p), encode(Event{Partition: p, N: n, PublishedNs: time.Now().UnixNano()}),
				jetstream.WithExpectStream(Stream))
			if err != nil {
				return fmt.Errorf("pipeline: publishing event %d of partition %d: %w", n, p, err)
			}
			acks[p] = f
		}
		for p, f := range acks {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return fmt.Errorf("pipeline: event %d of partition %d was not stored: %w", n, p, err)
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		if after != nil {
			after(n)
		}
		if pace > 0 {
			if !Sleep(ctx, time.Until(began.Add(time.Duration(n)*pace))) {
				return context.Cause(ctx)
			}
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

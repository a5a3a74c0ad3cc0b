package worker_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/offsets/memory"
	"github.com/shardlease/shardlease/shard"
	shardmem "github.com/shardlease/shardlease/shard/memory"
	"github.com/shardlease/shardlease/worker"
)

// TestWorkerSaysWhatItRuns: the release a worker is configured to show and
// the protocol it speaks are in its member key, its Status and its
// shardlease_build_info metric.
func TestWorkerSaysWhatItRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		coord := shardmem.New()
		reg := newRegistry()
		w, err := worker.New(worker.Config{ID: "w1", Version: "0.2.0-dev+abc1234", Fleet: shard.Config{Shards: 4}, Coordinator: coord,
			Offsets: memory.New(), Handler: worker.HandlerFunc(func(ctx context.Context, _ *worker.Claim) error { <-ctx.Done(); return nil }),
			Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		time.Sleep(5 * time.Second)
		synctest.Wait()

		snap, err := coord.Fleet().Watch(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := snap.Member("w1")
		if !ok || m.Version != "0.2.0-dev+abc1234" || m.Protocol != shard.Protocol || m.Speaks() != shard.Protocol {
			t.Errorf("member key %+v, want the version and protocol %d", m, shard.Protocol)
		}
		if st := w.Status(); st.Version != "0.2.0-dev+abc1234" || st.Protocol != shard.Protocol || !slices.Equal(st.Steps, shard.Steps()) {
			t.Errorf("status says version %q, protocol %d, steps %v", st.Version, st.Protocol, st.Steps)
		}
		if !m.HasStep(shard.StepGenerations) {
			t.Errorf("member key %+v does not name the %q step", m, shard.StepGenerations)
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range families {
			if f.GetName() != "shardlease_build_info" {
				continue
			}
			for _, mt := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range mt.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				found = labels["version"] == "0.2.0-dev+abc1234" && labels["protocol"] == strconv.Itoa(shard.Protocol) &&
					labels["steps"] == strings.Join(shard.Steps(), ",") && mt.GetGauge().GetValue() == 1
			}
		}
		if !found {
			t.Errorf("no shardlease_build_info 1 with the version, protocol and steps")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

package faults

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/memory"
)

func TestModes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := Wrap(memory.New())
		ctx := context.Background()
		if _, err := f.Sessions().Create(ctx, shard.SessionSpec{Worker: "a", TTL: time.Second}); err != nil {
			t.Fatalf("healthy: %v", err)
		}
		f.Set(Fail)
		if _, err := f.Fleet().Watch(ctx, 0); !errors.Is(err, shard.ErrUnavailable) {
			t.Fatalf("fail mode: %v, want ErrUnavailable", err)
		}
		f.Set(Hang)
		done := make(chan error, 1)
		go func() { _, err := f.Fleet().Watch(ctx, 0); done <- err }()
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("hang mode returned %v", err)
		default:
		}
		f.Set(Healthy)
		if err := <-done; err != nil {
			t.Fatalf("a hung call did not go through after healing: %v", err)
		}
		f.Set(Hang)
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := f.Fleet().Watch(cctx, 0); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a hung call ignored its context: %v", err)
		}
	})
}

func TestGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Gate
		if !g.Wait(context.Background()) {
			t.Fatal("the zero gate is not open")
		}
		g.Close()
		passed := make(chan bool, 1)
		go func() { passed <- g.Wait(context.Background()) }()
		synctest.Wait()
		if len(passed) != 0 {
			t.Fatal("a closed gate let a waiter through")
		}
		g.Open()
		if !<-passed {
			t.Fatal("opening the gate did not release the waiter")
		}
		g.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if g.Wait(ctx) {
			t.Fatal("Wait on a closed gate with an ended context reported passing")
		}
	})
}

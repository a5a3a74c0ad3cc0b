package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/internal/dashboard"
	"github.com/shardlease/shardlease/internal/demo"
	"github.com/shardlease/shardlease/shard"
)

// demoHTTP serves the demo's dashboard and metrics (--http). Listen first,
// so a bad address is refused before the fleet starts; the server itself
// starts from demo.Options.OnStart, once the fleet exists.
type demoHTTP struct {
	ln     net.Listener
	log    *zap.Logger
	out    io.Writer
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func listenDemoHTTP(addr string, log *zap.Logger, out io.Writer) (*demoHTTP, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http %q: %w", addr, err)
	}
	return &demoHTTP{ln: ln, log: log, out: out, cancel: func() {}}, nil
}

// registry is the demo's metrics registry, with the Go runtime and process
// collectors beside the workers' shardlease_* metrics.
func demoRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// start is demo.Options.OnStart.
func (h *demoHTTP) start(ctx context.Context) func(demo.Live) {
	return func(l demo.Live) {
		srv, err := dashboard.New(dashboard.Options{
			Name:        l.Name,
			Coordinator: l.Coordinator,
			Offsets:     l.Offsets,
			Head:        func(shard.ID) (int64, bool) { return l.Head(), true },
			Gatherer:    l.Registry,
			Crash:       l.Crash,
			Logger:      h.log,
		})
		if err != nil { // only a nil coordinator, which the demo never has
			fmt.Fprintf(h.out, "shardd demo: dashboard: %v\n", err)
			return
		}
		sctx, cancel := context.WithCancel(ctx)
		h.cancel = cancel
		h.wg.Go(func() {
			if err := srv.Serve(sctx, h.ln); err != nil {
				fmt.Fprintf(h.out, "shardd demo: dashboard: %v\n", err)
			}
		})
		url := "http://" + h.ln.Addr().String() + "/"
		fmt.Fprintf(h.out, "dashboard: %s   (JSON: %sapi/v1/fleet, metrics: %smetrics)\n", url, url, url)
	}
}

// stop ends the server (or just the listener, if the fleet never started).
func (h *demoHTTP) stop() {
	h.cancel()
	h.wg.Wait()
	h.ln.Close()
}

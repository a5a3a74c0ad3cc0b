package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/shard/etcd"
	"github.com/shardlease/shardlease/worker"
)

// serveWorkerHTTP serves, on ln, Prometheus /metrics (the worker's metrics,
// the coordinator requests it sent, Go and process metrics), /status (the
// worker's Status as JSON) and /readyz (readiness), and logs the bound address (useful with port 0).
// stop shuts the server down.
func serveWorkerHTTP(ln net.Listener, reg *prometheus.Registry, w *worker.Worker, requests requestCollector, log *zap.Logger) (stop func(), err error) {
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		requests,
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /status", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(w.Status())
	})
	mux.HandleFunc("GET /readyz", func(rw http.ResponseWriter, _ *http.Request) {
		code, why := readiness(w.Status())
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rw.WriteHeader(code)
		_, _ = fmt.Fprintln(rw, why)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server failed", zap.Error(err))
		}
	}()
	log.Info("serving /metrics and /status", zap.String("addr", ln.Addr().String()))
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// readiness is /readyz's answer: 200 while the worker is in the fleet
// (active), 503 with the reason while it joins or rejoins (Status.Waiting:
// an unreachable coordinator, its ID held by another session), drains or
// has stopped. An orchestrator's readiness probe holds a rolling update
// until the new worker is in: a fleet never loses two workers to a roll
// at once.
func readiness(st worker.Status) (int, string) {
	switch {
	case st.State == worker.StateActive:
		return http.StatusOK, "ready: in the fleet"
	case st.Waiting != "":
		return http.StatusServiceUnavailable, fmt.Sprintf("not ready: %s, waiting: %s", st.State, st.Waiting)
	default:
		return http.StatusServiceUnavailable, fmt.Sprintf("not ready: %s", st.State)
	}
}

// requestCollector exports a coordinator's request counts:
// shardlease_consul_requests_total{endpoint="PUT /v1/txn",…} on Consul,
// shardlease_etcd_requests_total{method="/etcdserverpb.KV/Txn",…} on etcd,
// none on the embedded coordinator.
type requestCollector struct {
	counts func() map[string]int64
	desc   *prometheus.Desc
}

// consulRequests exports a Consul coordinator's requests.
func consulRequests(rc *consul.RequestCounter, id string) requestCollector {
	return requestCollector{counts: rc.Counts, desc: prometheus.NewDesc("shardlease_consul_requests_total",
		"HTTP requests sent to Consul, by method and endpoint.", []string{"endpoint"}, prometheus.Labels{"worker": id})}
}

// etcdRequests exports an etcd client's requests.
func etcdRequests(rc *etcd.RequestCounter, id string) requestCollector {
	return requestCollector{counts: rc.Counts, desc: prometheus.NewDesc("shardlease_etcd_requests_total",
		"Requests sent to etcd (unary calls, and messages sent on streams), by gRPC method.", []string{"method"}, prometheus.Labels{"worker": id})}
}

func (c requestCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c requestCollector) Collect(ch chan<- prometheus.Metric) {
	for ep, n := range c.counts() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), ep)
	}
}

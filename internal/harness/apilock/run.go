package apilock

import (
	"context"
	"net/http"

	"github.com/hashicorp/consul/api"
	"go.uber.org/zap"
)

// Run runs the worker until ctx ends, then stops every shard's work,
// releases its locks (a tuned worker also its member key, session and
// check) and returns nil; it returns an error only for a bad Config.
// Before it returns it cuts the requests it still has in flight (api.Lock's
// blocking queries take no context), so no goroutine of its outlives it by
// more than the return of an aborted request. log may be nil.
func Run(ctx context.Context, cfg Config, log *zap.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if log == nil {
		log = zap.NewNop()
	}
	conn := *cfg.Consul
	var base http.RoundTripper = conn.Transport
	if conn.HttpClient != nil {
		base = conn.HttpClient.Transport
	}
	if base == nil {
		base = api.DefaultConfig().Transport
	}
	sev := NewSeverable(base)
	defer sev.Sever()
	conn.HttpClient = &http.Client{Transport: sev}
	c, err := api.NewClient(&conn)
	if err != nil {
		return err
	}
	log = log.With(zap.String("worker", cfg.ID), zap.String("mode", string(cfg.Mode)))
	if cfg.Mode == Tuned {
		runTuned(ctx, c, cfg, log)
		return nil
	}
	runDefault(ctx, c, cfg, sev)
	return nil
}

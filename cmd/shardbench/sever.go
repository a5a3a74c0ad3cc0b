package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
)

// errSevered is what a severed worker's requests fail with.
var errSevered = errors.New("shardbench: severed (simulated crash)")

// severable is an HTTP transport that can be cut, to make an in-process
// worker look crashed to Consul: from sever on, no request of its reaches
// the agent, and requests in flight (blocking queries included) are
// aborted. Its session is neither renewed nor destroyed, so Consul
// invalidates it exactly as it would a kill -9'd process's: when its TTL or
// health check runs out.
type severable struct {
	base http.RoundTripper
	// requests counts what reaches the agent (coordinator-load, cold-start).
	requests requestTap
	ctx      context.Context // done once severed
	cut      context.CancelFunc
	once     sync.Once
}

func newSeverable(base http.RoundTripper) *severable {
	ctx, cut := context.WithCancel(context.Background())
	return &severable{base: base, ctx: ctx, cut: cut}
}

// wrap suits consul.Config.WrapTransport.
func (s *severable) wrap(base http.RoundTripper) http.RoundTripper {
	s.base = base
	return s
}

// sever cuts the transport for good.
func (s *severable) sever() { s.once.Do(s.cut) }

func (s *severable) RoundTrip(req *http.Request) (*http.Response, error) {
	if s.ctx.Err() != nil {
		return dead(req)
	}
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(s.ctx, cancel)
	resp, err := s.requests.roundTrip(s.base, req.WithContext(ctx))
	if err != nil {
		stop()
		cancel()
		if s.ctx.Err() != nil {
			return dead(req)
		}
		return nil, err
	}
	// The request's context must live until its body is read.
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: func() { stop(); cancel() }}
	return resp, nil
}

// dead answers a severed request. A session renewal of api.Lock's
// (Session.RenewPeriodic) gets "404 no such session", on which it stops at
// once; any other error would keep its goroutine retrying (without reaching
// Consul) until the session TTL had passed, outliving the worker. The
// session itself is untouched: on the agent it is simply no longer renewed.
func dead(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut && strings.HasPrefix(req.URL.Path, "/v1/session/renew/") {
		return &http.Response{
			Status: "404 Not Found", StatusCode: http.StatusNotFound, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Body: http.NoBody, Request: req,
		}, nil
	}
	return nil, errSevered
}

type releasingBody struct {
	io.ReadCloser
	release func()
	once    sync.Once
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}

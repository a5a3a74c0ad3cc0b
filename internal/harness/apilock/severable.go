package apilock

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
)

// ErrSevered is what a severed transport's requests fail with.
var ErrSevered = errors.New("apilock: severed")

// Severable is an HTTP transport that can be cut for good: from Sever on,
// no request reaches the agent and requests in flight (blocking queries
// included) are aborted. Run cuts its own when it ends, since api.Lock's
// blocking queries take no context; shardbench cuts an in-process worker's
// to make it look kill -9'd to Consul: its sessions are neither renewed nor
// destroyed.
type Severable struct {
	base http.RoundTripper
	ctx  context.Context // done once severed
	cut  context.CancelFunc
	once sync.Once
}

// NewSeverable wraps base (nil: http.DefaultTransport).
func NewSeverable(base http.RoundTripper) *Severable {
	if base == nil {
		base = http.DefaultTransport
	}
	ctx, cut := context.WithCancel(context.Background())
	return &Severable{base: base, ctx: ctx, cut: cut}
}

// Sever cuts the transport for good.
func (s *Severable) Sever() { s.once.Do(s.cut) }

// RoundTrip sends req unless the transport is severed.
func (s *Severable) RoundTrip(req *http.Request) (*http.Response, error) {
	if s.ctx.Err() != nil {
		return dead(req)
	}
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(s.ctx, cancel)
	resp, err := s.base.RoundTrip(req.WithContext(ctx))
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
	return nil, ErrSevered
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

package fleet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/shardlease/shardlease/internal/harness/procfleet"
	"github.com/shardlease/shardlease/internal/reqcount"
	"github.com/shardlease/shardlease/shard/consul"
	"github.com/shardlease/shardlease/shard/etcd"
)

// receivedBytes counts what one worker reads from Consul: every response's
// status line and headers, as they were on the wire, and its body as far
// as the worker reads it. shard/consul turns gzip off for a local agent, so
// the body is counted as it crossed the connection, less the framing of a
// chunked body (Transfer-Encoding and a few bytes a chunk: about 0.2 % of
// a 4 MB listing). The zero value is ready.
type receivedBytes struct{ n atomic.Int64 }

// count adds resp's head now and its body as it is read.
func (b *receivedBytes) count(resp *http.Response) {
	head := int64(len(resp.Proto) + 1 + len(resp.Status) + 2 + 2) // "HTTP/1.1 200 OK\r\n" … "\r\n"
	for k, vs := range resp.Header {
		for _, v := range vs {
			head += int64(len(k) + 2 + len(v) + 2) // "K: v\r\n"
		}
	}
	b.n.Add(head)
	resp.Body = &countingBody{ReadCloser: resp.Body, n: &b.n}
}

// load returns the bytes counted so far.
func (b *receivedBytes) load() int64 { return b.n.Load() }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// Received returns the bytes the fleet's current workers have read from
// their coordinator so far.
func (f *Shardlease) Received() int64 {
	_, n := f.workers.counters()
	return n
}

// Requests are the request counters of the fleet's current workers.
func (f *Shardlease) Requests() []*reqcount.Counter {
	out, _ := f.workers.counters()
	return out
}

// ListingBytes reads the fleet's whole prefix once, as every worker of
// protocol 1 did on every change (on etcd: the mirror's first load), and
// returns the bytes that took.
func (f *Shardlease) ListingBytes(ctx context.Context) (int64, error) {
	var read func() int64
	var c procfleet.Observed
	var err error
	if f.etcd != nil {
		var rc etcd.RequestCounter
		c, err = procfleet.DialEtcd(etcd.Connection{Endpoints: f.etcd, Requests: &rc}, etcd.Config{Prefix: f.cfg.Prefix})
		read = rc.Received
	} else {
		sev := newSeverable(nil)
		cfg := f.cfg
		cfg.WrapTransport = sev.wrap
		c, err = consul.New(cfg)
		read = sev.requests.received.load
	}
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := c.Fleet().Watch(ctx, 0); err != nil {
		return 0, fmt.Errorf("listing %s: %w", f.cfg.Prefix, err)
	}
	return read(), nil
}

package fleet

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/shardlease/shardlease/shard/consul"
)

// requestTap counts what one in-process worker sends to Consul: every HTTP
// request, in total and per endpoint (shard/consul's RequestCounter), and
// the outcome of every KV acquire (PUT /v1/kv/K?acquire=S, what api.Lock
// sends to take a lock: Consul answers true or false). Every worker's
// severable transport has one, so coordinator-load reads the requests of
// both systems the same way; and the bytes it reads back (scale-out). The
// zero value is ready.
type requestTap struct {
	consul.RequestCounter
	acquired, refused atomic.Int64
	received          receivedBytes
}

// roundTrip sends req through next and counts it.
func (t *requestTap) roundTrip(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	resp, err := t.Wrap(next).RoundTrip(req)
	if err == nil {
		t.received.count(resp)
	}
	if err != nil || req.Method != http.MethodPut || !strings.HasPrefix(req.URL.Path, "/v1/kv/") || !req.URL.Query().Has("acquire") {
		return resp, err
	}
	// The answer is the four or five bytes "true" or "false": read it here
	// and hand the caller a copy.
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, 64))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr == nil && resp.StatusCode == http.StatusOK {
		switch strings.TrimSpace(string(body)) {
		case "true":
			t.acquired.Add(1)
		case "false":
			t.refused.Add(1)
		}
	}
	return resp, nil
}

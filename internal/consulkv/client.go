package consulkv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/hashicorp/consul/api"
)

// Client is KV over a Consul API client.
type Client struct {
	api *api.Client
}

var _ KV = (*Client)(nil)

// New returns KV over c. The caller keeps c (and closes its transport).
func New(c *api.Client) *Client { return &Client{api: c} }

// Txn sends ops through Raw().Write rather than Txn().Txn, because the
// latter flattens every status but 200 and 409 into an untyped "Failed
// request" error, and the status (403, 413, 429, 500) is what tells a
// refusal from a transient failure.
func (c *Client) Txn(ctx context.Context, ops api.TxnOps) (api.TxnResults, api.TxnErrors, error) {
	if err := TooManyOps(len(ops)); err != nil {
		return nil, nil, err
	}
	var resp api.TxnResponse
	_, err := c.api.Raw().Write("/v1/txn", ops, &resp, (&api.WriteOptions{}).WithContext(ctx))
	var se api.StatusError
	if errors.As(err, &se) && se.Code == http.StatusConflict {
		var rolled api.TxnResponse
		if jerr := json.Unmarshal([]byte(se.Body), &rolled); jerr != nil || len(rolled.Errors) == 0 {
			return nil, nil, fmt.Errorf("transaction rolled back with an unreadable answer: %s", se.Body)
		}
		return nil, rolled.Errors, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return resp.Results, nil, nil
}

// TooManyOps refuses a transaction of n operations that Consul would
// refuse, as Consul does (HTTP 413), before anything is sent: a caller that
// did not chunk has a bug, and the answer should say so without a round
// trip. It is nil for n ≤ MaxTxnOps. The in-memory twin
// (internal/harness/consulkvtest) refuses with it too.
func TooManyOps(n int) error {
	if n <= MaxTxnOps {
		return nil
	}
	return api.StatusError{Code: http.StatusRequestEntityTooLarge,
		Body: fmt.Sprintf("Transaction contains too many operations (%d > %d)", n, MaxTxnOps)}
}

func (c *Client) Get(ctx context.Context, key string, q Query) (*api.KVPair, Meta, error) {
	kv, meta, err := c.api.KV().Get(key, q.options(ctx))
	if err != nil {
		return nil, Meta{}, err
	}
	return kv, metaOf(meta), nil
}

func (c *Client) List(ctx context.Context, prefix string, q Query) (api.KVPairs, Meta, error) {
	pairs, meta, err := c.api.KV().List(prefix, q.options(ctx))
	if err != nil {
		return nil, Meta{}, err
	}
	return pairs, metaOf(meta), nil
}

func (c *Client) Keys(ctx context.Context, prefix, separator string, q Query) ([]string, Meta, error) {
	keys, meta, err := c.api.KV().Keys(prefix, separator, q.options(ctx))
	if err != nil {
		return nil, Meta{}, err
	}
	return keys, metaOf(meta), nil
}

func (c *Client) CAS(ctx context.Context, p *api.KVPair) (bool, error) {
	ok, _, err := c.api.KV().CAS(p, (&api.WriteOptions{}).WithContext(ctx))
	return ok, err
}

func (c *Client) Delete(ctx context.Context, key string) error {
	_, err := c.api.KV().Delete(key, (&api.WriteOptions{}).WithContext(ctx))
	return err
}

func (c *Client) DeleteCAS(ctx context.Context, p *api.KVPair) (bool, error) {
	ok, _, err := c.api.KV().DeleteCAS(p, (&api.WriteOptions{}).WithContext(ctx))
	return ok, err
}

func (c *Client) DeleteTree(ctx context.Context, prefix string) error {
	_, err := c.api.KV().DeleteTree(prefix, (&api.WriteOptions{}).WithContext(ctx))
	return err
}

func (q Query) options(ctx context.Context) *api.QueryOptions {
	return (&api.QueryOptions{WaitIndex: q.WaitIndex, WaitTime: q.WaitTime, RequireConsistent: q.Consistent}).WithContext(ctx)
}

func metaOf(m *api.QueryMeta) Meta {
	if m == nil {
		return Meta{}
	}
	return Meta{LastIndex: m.LastIndex, FilteredByACLs: m.ResultsFilteredByACLs}
}

package consul_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/harness/consultest"
	"github.com/shardlease/shardlease/offsets"
	"github.com/shardlease/shardlease/offsets/consul"
	"github.com/shardlease/shardlease/shard"
)

func wantErr(t *testing.T, err, want error, says ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	t.Logf("error: %v", err)
	if want != nil && !errors.Is(err, want) {
		t.Errorf("error does not wrap %v", want)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error does not say %q", s)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	c, _ := api.NewClient(api.DefaultConfig())
	tests := []struct {
		name string
		cfg  consul.Config
		says []string
	}{
		{"empty", consul.Config{}, []string{"no Client", "prefix is empty"}},
		{"slashes", consul.Config{Client: c, Prefix: "/fleet/"}, []string{`prefix "/fleet/"`}},
		{"spaces", consul.Config{Client: c, Prefix: "my fleet"}, []string{`prefix "my fleet"`}},
		{"negative timeout", consul.Config{Client: c, Prefix: "f", RequestTimeout: -time.Second}, []string{"request timeout -1s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := consul.New(tt.cfg)
			wantErr(t, err, shard.ErrInvalidArgument, tt.says...)
		})
	}
}

// An agent that is not there: every call fails with ErrUnavailable naming
// the address, quickly, and nothing is reported as done.
func TestUnreachable(t *testing.T) {
	cfg := api.DefaultNonPooledConfig()
	cfg.Address = "127.0.0.1:1"
	defer cfg.Transport.CloseIdleConnections()
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := consul.New(consul.Config{Client: c, Address: cfg.Address, Prefix: "fleet", RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := time.Now()
	wantErr(t, st.Commit(t.Context(), "s", 1, 1), consul.ErrUnavailable, "commit shard s at 127.0.0.1:1", "connection refused")
	_, err = st.Load(t.Context(), "s")
	wantErr(t, err, consul.ErrUnavailable, "load shard s at 127.0.0.1:1")
	wantErr(t, st.CommitBatch(t.Context(), []consul.Entry{{Shard: "a", Token: 1, Offset: 1}}), consul.ErrUnavailable, "127.0.0.1:1")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("failing took %v", d)
	}
}

// A token without write permission on the offsets keys is told what it
// lacks.
func TestPermissionDenied(t *testing.T) {
	a := consultest.StartDev(t, consultest.WithACL())
	cfg := a.Config()
	cfg.Token = "" // anonymous, default policy deny
	defer cfg.Transport.CloseIdleConnections()
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := consul.New(consul.Config{Client: c, Address: a.HTTPAddr, Prefix: "fleet"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	wantErr(t, st.Commit(t.Context(), "s", 1, 1), consul.ErrPermissionDenied, `key_prefix "fleet/offsets/"`)
	_, err = st.Load(t.Context(), "s")
	wantErr(t, err, consul.ErrPermissionDenied, "fleet/offsets/")

	// Read but not write: the CAS itself is refused.
	admin := a.Client(t)
	pol, _, err := admin.ACL().PolicyCreate(&api.ACLPolicy{Name: "offsets-read", Rules: `key_prefix "fleet/offsets/" { policy = "read" }`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := admin.ACL().TokenCreate(&api.ACLToken{Policies: []*api.ACLTokenPolicyLink{{ID: pol.ID}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg2 := a.Config()
	cfg2.Token = tok.SecretID
	defer cfg2.Transport.CloseIdleConnections()
	c2, err := api.NewClient(cfg2)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := consul.New(consul.Config{Client: c2, Address: a.HTTPAddr, Prefix: "fleet"})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Load(t.Context(), "s"); err != nil {
		t.Fatalf("Load with read permission: %v", err)
	}
	wantErr(t, ro.Commit(t.Context(), "s", 1, 1), consul.ErrPermissionDenied, "Permission denied", `key_prefix "fleet/offsets/"`)
	wantErr(t, ro.CommitBatch(t.Context(), []consul.Entry{{Shard: "s", Token: 1, Offset: 1}}), consul.ErrPermissionDenied)
}

// A value that is not an offsets record is reported for its shard by
// every method and never overwritten; other shards are unaffected.
func TestCorruptValue(t *testing.T) {
	a := consultest.StartDev(t)
	st := newStore(t, a, freshPrefix())
	kv := a.Client(t).KV()
	ctx := t.Context()
	for name, tt := range map[string]struct{ value, says string }{
		"not json":          {"hello", "is not an offsets record"},
		"unknown field":     {`{"v":1,"offset":1,"token":1,"floor":1,"owner":"w1"}`, "unknown field"},
		"newer version":     {`{"v":2,"offset":1,"token":1,"floor":1}`, "record version 2"},
		"token above floor": {`{"v":1,"offset":1,"token":9,"floor":3}`, "token 9 above floor 3"},
		"negative offset":   {`{"v":1,"offset":-5,"token":1,"floor":1}`, "negative offset -5"},
		"no floor":          {`{"v":1,"offset":0,"token":0,"floor":0}`, "floor 0"},
		"empty":             {"", "is not an offsets record"},
		"trailing":          {`{"v":1,"offset":1,"token":1,"floor":1}{}`, "data after the record"},
	} {
		t.Run(name, func(t *testing.T) {
			bad := shard.ID("bad-" + randomHex(3))
			if _, err := kv.Put(&api.KVPair{Key: st.Key(bad), Value: []byte(tt.value)}, nil); err != nil {
				t.Fatal(err)
			}
			_, err := st.Load(ctx, bad)
			wantErr(t, err, consul.ErrCorrupt, "shard "+string(bad), st.Key(bad), tt.says)
			wantErr(t, st.Commit(ctx, bad, 100, 1), consul.ErrCorrupt, tt.says)
			wantErr(t, st.Fence(ctx, bad, 100), consul.ErrCorrupt, tt.says)
			err = st.CommitBatch(ctx, []consul.Entry{{Shard: "fine", Token: 1, Offset: 1}, {Shard: bad, Token: 100, Offset: 1}})
			var be *consul.BatchError
			if !errors.As(err, &be) || be.Errs[0] != nil || !errors.Is(be.Errs[1], consul.ErrCorrupt) {
				t.Errorf("batch with a corrupt shard: %v; want only that entry refused", err)
			}
			p, _, err := kv.Get(st.Key(bad), nil)
			if err != nil || string(p.Value) != tt.value {
				t.Errorf("the corrupt value was overwritten: %q, %v", p.Value, err)
			}
		})
	}
	if cp, err := st.Load(ctx, "fine"); err != nil || cp != (offsets.Checkpoint{Offset: 1, Token: 1, Floor: 1}) {
		t.Errorf("other shard: %+v, %v", cp, err)
	}
}

// Shard IDs that would not survive as a key unchanged are refused.
func TestBadShardIDs(t *testing.T) {
	st := newStore(t, consultest.StartDev(t), freshPrefix())
	ctx := t.Context()
	long := shard.ID(strings.Repeat("x", consul.MaxShardLen+1))
	for name, tt := range map[string]struct {
		err  error
		says string
	}{
		"invalid UTF-8": {st.Commit(ctx, "a\xff", 1, 1), `shard "a\xff" is not valid UTF-8`},
		"other invalid": {st.Commit(ctx, "a\xfe", 1, 1), `shard "a\xfe"`},
		"NUL":           {st.Fence(ctx, "a\x00", 1), "NUL"},
		"too long":      {st.Commit(ctx, long, 1, 1), "1025 bytes"},
		"batch dup":     {st.CommitBatch(ctx, []consul.Entry{{Shard: "a", Token: 1, Offset: 1}, {Shard: "a", Token: 2, Offset: 2}}), "entries 0 and 1 are both for shard a"},
		"batch entry":   {st.CommitBatch(ctx, []consul.Entry{{Shard: "a", Token: 0, Offset: 1}}), "batch entry 0"},
	} {
		t.Run(name, func(t *testing.T) {
			if !errors.Is(tt.err, shard.ErrInvalidArgument) || tt.err == nil || !strings.Contains(tt.err.Error(), tt.says) {
				t.Errorf("error %v; want shard.ErrInvalidArgument saying %q", tt.err, tt.says)
			}
		})
	}
	if cp, err := st.Load(ctx, "a"); err != nil || cp != (offsets.Checkpoint{}) {
		t.Errorf("Load(a) = %+v, %v: something was written", cp, err)
	}
}

package bench

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/shard/consul"
)

// Env is what every scenario of a run gets.
type Env struct {
	Consul *api.Config // the agent all scenarios of a run share (Address set)
	Trials int         // repetitions per measurement (--trials)
	Small  bool        // --small: CI smoke sizes (Sizes.For), its figures not results
	Log    io.Writer   // progress lines (stderr)
	// PostgresDSN is --postgres, the PostgreSQL of commit-throughput and
	// stream-e2e: "" starts a throwaway cluster for the scenario.
	PostgresDSN string
	// Etcd is the run's etcd, for the scenarios that run a fleet on it
	// (--etcd, or one started on first use).
	Etcd *EtcdSource
}

// The engines a shardlease fleet runs on: Consul (every scenario's), and
// etcd (the engines scenario's side-by-side rows).
const (
	EngineConsul = "Consul"
	EngineEtcd   = "etcd"
)

// Logf writes one progress line.
func (e *Env) Logf(format string, args ...any) {
	fmt.Fprintf(e.Log, format+"\n", args...)
}

// CoordConfig is a shardlease coordinator's config for the run's agent,
// on prefix.
func (e *Env) CoordConfig(prefix string) consul.Config {
	c := consul.DefaultConfig()
	c.Address, c.Scheme, c.Token, c.TokenFile = e.Consul.Address, e.Consul.Scheme, e.Consul.Token, e.Consul.TokenFile
	c.Datacenter, c.TLS = e.Consul.Datacenter, e.Consul.TLSConfig
	c.Prefix = prefix
	return c
}

// APIConfig is a fresh client config for the run's agent, with its own
// pooled transport (api.DefaultConfig's) and no HTTP client, so that the
// caller may wrap the transport.
func (e *Env) APIConfig() *api.Config {
	cfg := *e.Consul
	cfg.Transport = api.DefaultConfig().Transport
	cfg.HttpClient = nil
	return &cfg
}

// Sizes are a scenario's parameters at full size and at --small's smoke
// sizes: a scenario declares both as data and reads the run's with For, so
// that no figure of it forks on --small anywhere else.
type Sizes[P any] struct {
	Full, Small P
}

// For returns the parameters of env's run: Small with --small, else Full.
func (s Sizes[P]) For(env *Env) P {
	if env.Small {
		return s.Small
	}
	return s.Full
}

// RandomHex returns n random bytes in hex: a fresh KV prefix's or table's
// suffix, so that runs on one agent or server never share keys.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

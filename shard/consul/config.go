package consul

import (
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/shardlease/shardlease/internal/consulkv"
	"github.com/shardlease/shardlease/internal/fleetkeys"
	"github.com/shardlease/shardlease/shard"
)

// Liveness is how a session's holder proves it is alive.
type Liveness string

const (
	// LivenessCheck binds each session to a TTL health check registered on
	// the agent the coordinator talks to (NodeChecks: serfHealth and the
	// check). Renewing passes the check. Consul invalidates the session as
	// soon as the agent sees the check's TTL run out: about SessionSpec.TTL,
	// any positive TTL is accepted. The default: fast failover.
	LivenessCheck Liveness = "check"
	// LivenessTTL uses a session TTL. Consul accepts 10 s to 24 h and may take
	// up to 2·TTL to invalidate a session that is no longer renewed.
	LivenessTTL Liveness = "ttl"
)

// Defaults for the zero values of Config.
const (
	DefaultMemberGrace    = time.Minute
	DefaultWatchWait      = 5 * time.Minute
	DefaultRequestTimeout = consulkv.DefaultRequestTimeout
)

// Consul's own limits (1.14), checked before a request is sent so that the
// error names the value instead of coming back as an HTTP 500.
const (
	// MinSessionTTL and MaxSessionTTL bound a session TTL (LivenessTTL).
	MinSessionTTL = 10 * time.Second
	MaxSessionTTL = 24 * time.Hour
	// MaxLockDelay is the longest lock-delay Consul honours (it silently
	// clamps longer ones; here they are refused).
	MaxLockDelay = 60 * time.Second
	// maxWatchWait is Consul's cap on a blocking query's wait.
	maxWatchWait = 10 * time.Minute
)

// Config says how to reach Consul and where the fleet lives. Start from
// DefaultConfig, which reads the environment the way the consul CLI does,
// then override fields (or bind flags with RegisterFlags). New copies it;
// the caller's struct is never modified.
type Config struct {
	// Address of the agent's HTTP API: host:port, or an http://, https://
	// or unix:// URL. $CONSUL_HTTP_ADDR, else 127.0.0.1:8500.
	Address string
	// Scheme is "http" or "https" ("https" when $CONSUL_HTTP_SSL is true).
	Scheme string
	// Token is the ACL token ($CONSUL_HTTP_TOKEN); TokenFile, if set, is
	// read instead ($CONSUL_HTTP_TOKEN_FILE).
	Token, TokenFile string
	// Datacenter to use; empty means the agent's own.
	Datacenter string
	// TLS: CAFile ($CONSUL_CACERT), CAPath ($CONSUL_CAPATH), CertFile
	// ($CONSUL_CLIENT_CERT), KeyFile ($CONSUL_CLIENT_KEY), Address as the
	// server name ($CONSUL_TLS_SERVER_NAME), InsecureSkipVerify
	// ($CONSUL_HTTP_SSL_VERIFY=false).
	TLS api.TLSConfig

	// Prefix is the fleet's KV prefix P, e.g. "shardlease/orders": the
	// fleet's keys are P/config, P/members/<id> and P/shards/<shard>.
	// Required; no leading or trailing '/'.
	Prefix string
	// Liveness of sessions; default LivenessCheck.
	Liveness Liveness
	// MemberGrace is how long a dead member key (no session) stays before
	// the coordinator deletes it. Zero means DefaultMemberGrace; negative
	// means as soon as a watch sees it dead.
	MemberGrace time.Duration
	// WatchWait is how long one blocking query waits before Consul answers
	// "unchanged" (Watch then simply asks again). Default 5 min, at most 10.
	WatchWait time.Duration
	// RequestTimeout bounds every call except Watch, on top of the caller's
	// context, so that a stalled agent gives shard.ErrUnavailable instead of
	// a hang. Default 10 s.
	RequestTimeout time.Duration
	// WrapTransport, if set, wraps the HTTP transport: a hook to count or
	// observe requests (see RequestCounter). It is not applied to the TLS
	// setup, which happens below it.
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// DefaultConfig returns the connection settings from the environment, as
// api.DefaultConfig reads them, and the documented defaults for the rest.
// Prefix is left empty: every fleet must name its own.
func DefaultConfig() Config {
	d := api.DefaultConfig()
	return Config{
		Address:        d.Address,
		Scheme:         d.Scheme,
		Token:          d.Token,
		TokenFile:      d.TokenFile,
		Datacenter:     d.Datacenter,
		TLS:            d.TLSConfig,
		Liveness:       LivenessCheck,
		MemberGrace:    DefaultMemberGrace,
		WatchWait:      DefaultWatchWait,
		RequestTimeout: DefaultRequestTimeout,
	}
}

// withDefaults fills zero values; it works on a copy.
func (c Config) withDefaults() Config {
	conn := c.Connection()
	c.Address, c.Scheme = conn.Address, conn.Scheme
	if c.Liveness == "" {
		c.Liveness = LivenessCheck
	}
	if c.MemberGrace == 0 {
		c.MemberGrace = DefaultMemberGrace
	}
	if c.WatchWait == 0 {
		c.WatchWait = DefaultWatchWait
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	return c
}

// Validate reports every problem with c (after defaults) at once, wrapping
// shard.ErrInvalidArgument.
func (c Config) Validate() error {
	c = c.withDefaults()
	var problems []string
	if p := fleetkeys.PrefixProblem(c.Prefix); p != "" {
		problems = append(problems, p)
	}
	if c.Liveness != LivenessCheck && c.Liveness != LivenessTTL {
		problems = append(problems, fmt.Sprintf("liveness %q is neither %q nor %q", c.Liveness, LivenessCheck, LivenessTTL))
	}
	problems = append(problems, c.Connection().Problems()...)
	if c.WatchWait < 0 || c.WatchWait > maxWatchWait {
		problems = append(problems, fmt.Sprintf("watch wait %v is out of range: want up to %v", c.WatchWait, maxWatchWait))
	}
	if c.RequestTimeout < 0 {
		problems = append(problems, fmt.Sprintf("request timeout %v must not be negative", c.RequestTimeout))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: consul coordinator config: %s", shard.ErrInvalidArgument, strings.Join(problems, "; "))
	}
	return nil
}

// Connection is how to reach Consul: the same settings an
// offsets/consul.Config takes.
type Connection = consulkv.Connection

// Connection returns c's connection settings (address, scheme,
// datacenter, token, TLS, transport wrapper) with the defaults the
// coordinator applies, for an offsets/consul store that should reach the
// agent as the coordinator does.
func (c Config) Connection() Connection {
	return consulkv.Connection{
		Address:       c.Address,
		Scheme:        c.Scheme,
		Datacenter:    c.Datacenter,
		Token:         c.Token,
		TokenFile:     c.TokenFile,
		TLS:           c.TLS,
		WrapTransport: c.WrapTransport,
	}.WithDefaults()
}

// RegisterFlags binds the connection settings to flags on fs, with the
// current values (normally DefaultConfig's, i.e. the environment's) as
// defaults, so that a flag overrides the environment:
//
//	-consul ADDR  -consul-token T  -consul-token-file F  -consul-datacenter DC
//	-consul-cacert F  -consul-capath D  -consul-client-cert F  -consul-client-key F
//	-consul-tls-server-name N  -consul-ssl  -consul-liveness check|ttl
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.RegisterConnectionFlags(fs)
	fs.Func("consul-liveness", `session liveness: "check" (TTL health check, fast failover; default) or "ttl" (session TTL, 10s minimum)`,
		func(s string) error {
			l := Liveness(s)
			if l != LivenessCheck && l != LivenessTTL {
				return fmt.Errorf("want %q or %q", LivenessCheck, LivenessTTL)
			}
			c.Liveness = l
			return nil
		})
}

// RegisterConnectionFlags is RegisterFlags without -consul-liveness, for a
// program that opens no session (a read-only tool such as shardctl): every
// connection setting, and nothing about sessions it never makes.
func (c *Config) RegisterConnectionFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Address, "consul", c.Address, "Consul agent HTTP address (env CONSUL_HTTP_ADDR)")
	fs.StringVar(&c.Token, "consul-token", c.Token, "Consul ACL token (env CONSUL_HTTP_TOKEN)")
	fs.StringVar(&c.TokenFile, "consul-token-file", c.TokenFile, "file holding the Consul ACL token (env CONSUL_HTTP_TOKEN_FILE)")
	fs.StringVar(&c.Datacenter, "consul-datacenter", c.Datacenter, "Consul datacenter (default: the agent's)")
	fs.StringVar(&c.TLS.CAFile, "consul-cacert", c.TLS.CAFile, "CA certificate file for Consul TLS (env CONSUL_CACERT)")
	fs.StringVar(&c.TLS.CAPath, "consul-capath", c.TLS.CAPath, "directory of CA certificates (env CONSUL_CAPATH)")
	fs.StringVar(&c.TLS.CertFile, "consul-client-cert", c.TLS.CertFile, "client certificate for Consul TLS (env CONSUL_CLIENT_CERT)")
	fs.StringVar(&c.TLS.KeyFile, "consul-client-key", c.TLS.KeyFile, "client key for Consul TLS (env CONSUL_CLIENT_KEY)")
	fs.StringVar(&c.TLS.Address, "consul-tls-server-name", c.TLS.Address, "server name to verify (env CONSUL_TLS_SERVER_NAME)")
	fs.BoolFunc("consul-ssl", "use HTTPS to reach Consul (env CONSUL_HTTP_SSL)", func(s string) error {
		on, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		c.Scheme = map[bool]string{true: "https", false: "http"}[on]
		return nil
	})
}

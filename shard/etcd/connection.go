package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/shardlease/shardlease/shard"
)

// DefaultDialTimeout bounds the first connection when
// Connection.DialTimeout is zero (etcdctl's default too).
const DefaultDialTimeout = 2 * time.Second

// Connection says how to reach etcd, as etcdctl's flags and environment
// do: endpoints, TLS and a user.
type Connection struct {
	// Endpoints are the members' client URLs or host:port pairs. Required.
	Endpoints []string
	// DialTimeout bounds the first connection (ETCDCTL_DIAL_TIMEOUT).
	// Default DefaultDialTimeout.
	DialTimeout time.Duration
	// CACert verifies the members' certificates (ETCDCTL_CACERT); Cert and
	// Key are this client's (ETCDCTL_CERT, ETCDCTL_KEY). Any of them, or
	// an https:// endpoint, turns TLS on.
	CACert, Cert, Key string
	// InsecureSkipVerify accepts any server certificate
	// (ETCDCTL_INSECURE_SKIP_TLS_VERIFY): for tests only.
	InsecureSkipVerify bool
	// User and Password authenticate (ETCDCTL_USER and ETCDCTL_PASSWORD).
	// Without a Password, User may be "user:password", as etcdctl's
	// --user.
	User, Password string

	// Requests, when set, counts the requests the client sends.
	Requests *RequestCounter

	// envProblems are the etcdctl variables ConnectionFromEnv could not
	// read, by variable: Validate reports them unless a flag set the
	// value instead.
	envProblems map[string]string
}

// ConnectionFromEnv is a Connection with etcdctl's environment variables
// as its values: ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY, ETCDCTL_USER,
// ETCDCTL_PASSWORD, ETCDCTL_DIAL_TIMEOUT and
// ETCDCTL_INSECURE_SKIP_TLS_VERIFY; not ETCDCTL_ENDPOINTS: a fleet moves
// to etcd only by a command line that says so (--etcd), never because an
// etcdctl session left endpoints in the environment. A value that cannot
// be read is reported by Validate, naming the variable, unless its flag
// is given.
func ConnectionFromEnv(getenv func(string) string) Connection {
	c := Connection{
		CACert: getenv("ETCDCTL_CACERT"), Cert: getenv("ETCDCTL_CERT"), Key: getenv("ETCDCTL_KEY"),
		User: getenv("ETCDCTL_USER"), Password: getenv("ETCDCTL_PASSWORD"),
		envProblems: map[string]string{},
	}
	if v := getenv("ETCDCTL_DIAL_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			c.envProblems["ETCDCTL_DIAL_TIMEOUT"] = fmt.Sprintf("ETCDCTL_DIAL_TIMEOUT=%q: want a positive duration such as 2s (or give --etcd-dial-timeout)", v)
		}
		c.DialTimeout = d
	}
	if v := getenv("ETCDCTL_INSECURE_SKIP_TLS_VERIFY"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			c.envProblems["ETCDCTL_INSECURE_SKIP_TLS_VERIFY"] = fmt.Sprintf("ETCDCTL_INSECURE_SKIP_TLS_VERIFY=%q: want true or false", v)
		}
		c.InsecureSkipVerify = on
	}
	return c
}

// RegisterFlags binds --etcd and its TLS and user flags, with c's values
// (ConnectionFromEnv's) as defaults.
func (c *Connection) RegisterFlags(fs *flag.FlagSet) {
	fs.Func("etcd", "run on etcd at these comma-separated endpoints, e.g. https://10.0.0.1:2379,https://10.0.0.2:2379, instead of Consul "+
		"(TLS and user from --etcd-cacert, --etcd-cert, --etcd-key, --etcd-user or etcdctl's ETCDCTL_* variables)", func(v string) error {
		c.Endpoints = nil
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				c.Endpoints = append(c.Endpoints, e)
			}
		}
		if len(c.Endpoints) == 0 {
			return errors.New("want at least one endpoint, e.g. 127.0.0.1:2379")
		}
		return nil
	})
	fs.Func("etcd-dial-timeout", "with --etcd: how long the first connection may take (env ETCDCTL_DIAL_TIMEOUT; default "+DefaultDialTimeout.String()+")", func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return errors.New("want a positive duration such as 2s")
		}
		c.DialTimeout = d
		delete(c.envProblems, "ETCDCTL_DIAL_TIMEOUT")
		return nil
	})
	fs.StringVar(&c.CACert, "etcd-cacert", c.CACert, "with --etcd: CA certificate file verifying the members (env ETCDCTL_CACERT)")
	fs.StringVar(&c.Cert, "etcd-cert", c.Cert, "with --etcd: client certificate file (env ETCDCTL_CERT)")
	fs.StringVar(&c.Key, "etcd-key", c.Key, "with --etcd: client key file (env ETCDCTL_KEY)")
	fs.StringVar(&c.User, "etcd-user", c.User, "with --etcd: user, or user:password (env ETCDCTL_USER)")
	fs.StringVar(&c.Password, "etcd-password", c.Password, "with --etcd: password of --etcd-user (env ETCDCTL_PASSWORD)")
}

// FlagsGiven are the names of the --etcd… flags given on fs, for a
// command that refuses them when it does not run on etcd.
func FlagsGiven(fs *flag.FlagSet) []string {
	var given []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "etcd" || strings.HasPrefix(f.Name, "etcd-") {
			given = append(given, "--"+f.Name)
		}
	})
	return given
}

// credentials are the user and password to authenticate with: a User of
// "user:password" is split only when no Password is given, as etcdctl
// does.
func (c Connection) credentials() (user, password string) {
	if c.Password == "" {
		if u, p, ok := strings.Cut(c.User, ":"); ok {
			return u, p
		}
	}
	return c.User, c.Password
}

// Validate reports every problem with c at once, wrapping
// shard.ErrInvalidArgument.
func (c Connection) Validate() error {
	var problems []string
	if len(c.Endpoints) == 0 {
		problems = append(problems, "no endpoints: name at least one etcd member, e.g. --etcd 127.0.0.1:2379")
	}
	if c.DialTimeout < 0 {
		problems = append(problems, fmt.Sprintf("dial timeout %v must not be negative", c.DialTimeout))
	}
	for _, v := range []string{"ETCDCTL_DIAL_TIMEOUT", "ETCDCTL_INSECURE_SKIP_TLS_VERIFY"} {
		if p, ok := c.envProblems[v]; ok {
			problems = append(problems, p)
		}
	}
	if user, password := c.credentials(); user != "" && password == "" {
		problems = append(problems, fmt.Sprintf("user %q has no password: give --etcd-password (ETCDCTL_PASSWORD) or user:password", user))
	} else if user == "" && password != "" {
		problems = append(problems, "a password without a user: give --etcd-user (ETCDCTL_USER)")
	}
	schemes := map[string]bool{}
	for _, e := range c.Endpoints {
		switch {
		case strings.HasPrefix(e, "https://"):
			schemes["https"] = true
		case strings.HasPrefix(e, "http://"):
			schemes["http"] = true
			if c.CACert != "" || c.Cert != "" || c.InsecureSkipVerify {
				problems = append(problems, fmt.Sprintf("endpoint %q is plain http:// but TLS settings were given (a CA, a client certificate or insecure-skip-verify): use https://, or drop them", e))
			}
		}
	}
	if schemes["http"] && schemes["https"] {
		problems = append(problems, fmt.Sprintf("endpoints %s mix http:// and https://: the client would use one for all", strings.Join(c.Endpoints, ",")))
	}
	if (c.Cert == "") != (c.Key == "") {
		problems = append(problems, fmt.Sprintf("client certificate %q and key %q go together: give both or neither", c.Cert, c.Key))
	}
	for _, f := range []struct{ what, path string }{{"CA certificate", c.CACert}, {"client certificate", c.Cert}, {"client key", c.Key}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			problems = append(problems, fmt.Sprintf("%s %q: %v", f.what, f.path, err))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: etcd connection: %s", shard.ErrInvalidArgument, strings.Join(problems, "; "))
	}
	return nil
}

// tlsOn reports whether the connection uses TLS.
func (c Connection) tlsOn() bool {
	if c.CACert != "" || c.Cert != "" || c.InsecureSkipVerify {
		return true
	}
	for _, e := range c.Endpoints {
		if strings.HasPrefix(e, "https://") {
			return true
		}
	}
	return false
}

// Dial validates c and returns a client of etcd. Without a user it does
// not wait for a member to answer (the first call does); with one, the
// client authenticates first, within the dial timeout, and an etcd that
// cannot be reached then is an error wrapping shard.ErrUnavailable (a
// command retries it). Keep-alive pings (2 s, answered within 6 s, as
// etcdctl's) tell a member that went silent from a quiet one. log
// receives the client's own messages (nil: none).
func (c Connection) Dial(log *zap.Logger) (*clientv3.Client, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	cfg := clientv3.Config{Endpoints: c.Endpoints, DialTimeout: c.DialTimeout, Logger: log,
		DialKeepAliveTime: 2 * time.Second, DialKeepAliveTimeout: 6 * time.Second}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	cfg.Username, cfg.Password = c.credentials()
	if c.Requests != nil {
		cfg.DialOptions = append(cfg.DialOptions, c.Requests.dialOptions()...)
	}
	if c.tlsOn() {
		t := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.InsecureSkipVerify} //nolint:gosec // only when asked for
		if c.CACert != "" {
			pem, err := os.ReadFile(c.CACert)
			if err != nil {
				return nil, fmt.Errorf("%w: etcd CA certificate: %w", shard.ErrInvalidArgument, err)
			}
			t.RootCAs = x509.NewCertPool()
			if !t.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("%w: etcd CA certificate %q holds no PEM certificate", shard.ErrInvalidArgument, c.CACert)
			}
		}
		if c.Cert != "" {
			pair, err := tls.LoadX509KeyPair(c.Cert, c.Key)
			if err != nil {
				return nil, fmt.Errorf("%w: etcd client certificate %q and key %q: %w", shard.ErrInvalidArgument, c.Cert, c.Key, err)
			}
			t.Certificates = []tls.Certificate{pair}
		}
		cfg.TLS = t
	}
	cli, err := clientv3.New(cfg)
	switch {
	case err != nil && refusedAuth(err):
		return nil, fmt.Errorf("%w: etcd at %s refused user %q: %w", shard.ErrPermissionDenied, strings.Join(c.Endpoints, ","), cfg.Username, err)
	case err != nil:
		return nil, fmt.Errorf("%w: etcd at %s: %w", shard.ErrUnavailable, strings.Join(c.Endpoints, ","), err)
	}
	return cli, nil
}

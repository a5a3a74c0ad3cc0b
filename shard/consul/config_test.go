package consul_test

import (
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/consul"
)

// TestConfigFromEnvironmentAndFlags: DefaultConfig reads the consul CLI's
// variables; flags bound with RegisterFlags override them.
func TestConfigFromEnvironmentAndFlags(t *testing.T) {
	env := map[string]string{
		"CONSUL_HTTP_ADDR":       "consul.example:8501",
		"CONSUL_HTTP_TOKEN":      "env-token",
		"CONSUL_HTTP_TOKEN_FILE": "",
		"CONSUL_CACERT":          "/etc/consul/ca.pem",
		"CONSUL_CAPATH":          "",
		"CONSUL_CLIENT_CERT":     "/etc/consul/client.pem",
		"CONSUL_CLIENT_KEY":      "/etc/consul/client-key.pem",
		"CONSUL_HTTP_SSL":        "true",
		"CONSUL_TLS_SERVER_NAME": "",
		"CONSUL_HTTP_SSL_VERIFY": "",
		"CONSUL_DATACENTER":      "",
		"CONSUL_NAMESPACE":       "",
		"CONSUL_PARTITION":       "",
		"CONSUL_HTTP_AUTH":       "",
		"CONSUL_GRPC_ADDR":       "",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	cfg := consul.DefaultConfig()
	if cfg.Address != "consul.example:8501" || cfg.Token != "env-token" || cfg.Scheme != "https" ||
		cfg.TLS.CAFile != "/etc/consul/ca.pem" || cfg.TLS.CertFile != "/etc/consul/client.pem" || cfg.TLS.KeyFile != "/etc/consul/client-key.pem" {
		t.Fatalf("DefaultConfig from the environment = %+v", cfg)
	}
	if cfg.Liveness != consul.LivenessCheck || cfg.MemberGrace != consul.DefaultMemberGrace || cfg.WatchWait != consul.DefaultWatchWait {
		t.Fatalf("DefaultConfig defaults = %+v", cfg)
	}

	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	err := fs.Parse([]string{"-consul", "127.0.0.1:9500", "-consul-token", "flag-token", "-consul-ssl=false",
		"-consul-cacert", "/tmp/ca.pem", "-consul-liveness", "ttl"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Address != "127.0.0.1:9500" || cfg.Token != "flag-token" || cfg.Scheme != "http" || cfg.TLS.CAFile != "/tmp/ca.pem" ||
		cfg.Liveness != consul.LivenessTTL || cfg.TLS.CertFile != "/etc/consul/client.pem" {
		t.Fatalf("after flags = %+v", cfg)
	}
	if err := fs.Parse([]string{"-consul-liveness", "heartbeat"}); err == nil {
		t.Fatal("an unknown liveness mode was accepted")
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*consul.Config)
		want []string // every problem named; none: valid
	}{
		{"valid", func(c *consul.Config) {}, nil},
		{"zero values get defaults", func(c *consul.Config) { *c = consul.Config{Prefix: "p"} }, nil},
		{"no prefix", func(c *consul.Config) { c.Prefix = "" }, []string{"prefix is empty"}},
		{"slashes", func(c *consul.Config) { c.Prefix = "/p/" }, []string{`prefix "/p/"`}},
		{"everything", func(c *consul.Config) {
			c.Prefix, c.Liveness, c.Scheme, c.WatchWait, c.RequestTimeout = "", "heartbeat", "gopher", time.Hour, -time.Second
		}, []string{"prefix", `liveness "heartbeat"`, `scheme "gopher"`, "watch wait 1h0m0s", "request timeout -1s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := consul.DefaultConfig()
			cfg.Prefix = "shardlease/orders"
			tt.edit(&cfg)
			err := cfg.Validate()
			_, newErr := consul.New(cfg)
			if len(tt.want) == 0 {
				if err != nil || newErr != nil {
					t.Fatalf("Validate = %v, New = %v; want valid", err, newErr)
				}
				return
			}
			if !errors.Is(err, shard.ErrInvalidArgument) || !errors.Is(newErr, shard.ErrInvalidArgument) {
				t.Fatalf("Validate = %v, New = %v; want ErrInvalidArgument", err, newErr)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not name %q", err, w)
				}
			}
		})
	}
}

// TestSessionSpecLimits: Consul's own limits are refused up front, naming
// the value, instead of coming back as an HTTP 500. No agent needed: the
// spec is checked before any request.
func TestSessionSpecLimits(t *testing.T) {
	for _, tt := range []struct {
		liveness consul.Liveness
		spec     shard.SessionSpec
		want     string
	}{
		{consul.LivenessTTL, shard.SessionSpec{Worker: "w", TTL: 2 * time.Second}, "ttl 2s is outside Consul's session TTL range"},
		{consul.LivenessTTL, shard.SessionSpec{Worker: "w", TTL: 48 * time.Hour}, "ttl 48h0m0s is outside"},
		{consul.LivenessCheck, shard.SessionSpec{Worker: "w", TTL: time.Second, LockDelay: 2 * time.Minute}, "lock-delay 2m0s exceeds Consul's maximum 1m0s"},
	} {
		cfg := consul.DefaultConfig()
		cfg.Address, cfg.Prefix, cfg.Liveness = "127.0.0.1:1", "p", tt.liveness
		c, err := consul.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Sessions().Create(t.Context(), tt.spec)
		if !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: CreateSession(%+v) = %v, want ErrInvalidArgument naming %q", tt.liveness, tt.spec, err, tt.want)
		}
		c.Close()
	}
}

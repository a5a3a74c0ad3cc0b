package etcd_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/etcd"
)

// TestConnectionFlagsAndEnvironment: etcdctl's variables are the flags'
// defaults, the flags override them, and ETCDCTL_ENDPOINTS alone never
// selects etcd.
func TestConnectionFlagsAndEnvironment(t *testing.T) {
	env := map[string]string{"ETCDCTL_ENDPOINTS": "10.9.9.9:2379", "ETCDCTL_CACERT": "/etc/ca.pem", "ETCDCTL_USER": "root:pw", "ETCDCTL_DIAL_TIMEOUT": "3s"}
	c, err := etcd.ConnectionFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Endpoints) != 0 || c.CACert != "/etc/ca.pem" || c.User != "root:pw" || c.DialTimeout != 3*time.Second {
		t.Fatalf("from the environment: %+v", c)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"--etcd", " a:1, b:2 ,", "--etcd-cacert", "/other.pem"}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Endpoints, " ") != "a:1 b:2" || c.CACert != "/other.pem" || c.User != "root:pw" {
		t.Fatalf("after the flags: %+v", c)
	}
	if err := fs.Parse([]string{"--etcd", " , "}); err == nil || !strings.Contains(err.Error(), "at least one endpoint") {
		t.Fatalf("--etcd with no endpoint = %v", err)
	}
	_, err = etcd.ConnectionFromEnv(func(k string) string {
		return map[string]string{"ETCDCTL_DIAL_TIMEOUT": "soon", "ETCDCTL_INSECURE_SKIP_TLS_VERIFY": "maybe"}[k]
	})
	for _, want := range []string{`ETCDCTL_DIAL_TIMEOUT="soon"`, `ETCDCTL_INSECURE_SKIP_TLS_VERIFY="maybe"`} {
		if !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("bad environment = %v, want ErrInvalidArgument naming %s", err, want)
		}
	}
}

// TestConnectionValidate names each wrong value.
func TestConnectionValidate(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := etcd.Connection{Cert: "/nope/cert.pem", DialTimeout: -time.Second}.Validate()
	for _, want := range []string{"no endpoints", "dial timeout -1s", `client certificate "/nope/cert.pem" and key "" go together`, `client certificate "/nope/cert.pem": stat`} {
		if !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want ErrInvalidArgument naming %q", err, want)
		}
	}
	if _, err := (etcd.Connection{Endpoints: []string{"127.0.0.1:1"}, CACert: notPEM}).Dial(nil); !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), notPEM) {
		t.Errorf("Dial with a CA file that is not PEM = %v, want ErrInvalidArgument naming it", err)
	}
}

// TestDial reaches a real member through Connection.Dial.
func TestDial(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli, err := etcd.Connection{Endpoints: cluster.Endpoints()}.Dial(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	c, err := etcd.New(etcd.Config{Client: cli, Prefix: freshPrefix()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg, err := c.Fleet().Configure(t.Context(), shard.Config{Shards: 4})
	if err != nil || cfg.Shards != 4 {
		t.Fatalf("Configure through a dialled client = %+v, %v", cfg, err)
	}
}

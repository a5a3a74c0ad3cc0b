package etcd_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardlease/shardlease/internal/harness/etcdtest"
	"github.com/shardlease/shardlease/shard"
	"github.com/shardlease/shardlease/shard/etcd"
)

// TestConnectionFlagsAndEnvironment: etcdctl's variables are the flags'
// defaults, the flags override them, and ETCDCTL_ENDPOINTS alone never
// selects etcd.
func TestConnectionFlagsAndEnvironment(t *testing.T) {
	env := map[string]string{"ETCDCTL_ENDPOINTS": "10.9.9.9:2379", "ETCDCTL_CACERT": "/etc/ca.pem", "ETCDCTL_USER": "root:pw", "ETCDCTL_DIAL_TIMEOUT": "3s"}
	c := etcd.ConnectionFromEnv(func(k string) string { return env[k] })
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
	bad := etcd.ConnectionFromEnv(func(k string) string {
		return map[string]string{"ETCDCTL_DIAL_TIMEOUT": "soon", "ETCDCTL_INSECURE_SKIP_TLS_VERIFY": "maybe"}[k]
	})
	bad.Endpoints = []string{"a:1"}
	err := bad.Validate()
	for _, want := range []string{`ETCDCTL_DIAL_TIMEOUT="soon"`, `ETCDCTL_INSECURE_SKIP_TLS_VERIFY="maybe"`} {
		if !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("bad environment = %v, want ErrInvalidArgument naming %s", err, want)
		}
	}
	// The flag overrides its variable, a bad value included.
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	bad.RegisterFlags(fs)
	if err := fs.Parse([]string{"--etcd-dial-timeout", "3s"}); err != nil {
		t.Fatal(err)
	}
	if err := bad.Validate(); err == nil || strings.Contains(err.Error(), "ETCDCTL_DIAL_TIMEOUT") {
		t.Errorf("after --etcd-dial-timeout: %v; want only the other variable named", err)
	}
	if got := etcd.FlagsGiven(fs); strings.Join(got, " ") != "--etcd-dial-timeout" {
		t.Errorf("FlagsGiven = %q", got)
	}
}

// TestConnectionValidate names each wrong value.
func TestConnectionValidate(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := etcd.Connection{Cert: "/nope/cert.pem", DialTimeout: -time.Second, User: "bob"}.Validate()
	for _, want := range []string{"no endpoints", "dial timeout -1s", `client certificate "/nope/cert.pem" and key "" go together`,
		`client certificate "/nope/cert.pem": stat`, `user "bob" has no password`} {
		if !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want ErrInvalidArgument naming %q", err, want)
		}
	}
	err = etcd.Connection{Endpoints: []string{"http://a:1", "https://b:2"}, InsecureSkipVerify: true, Password: "pw"}.Validate()
	for _, want := range []string{`endpoint "http://a:1" is plain http:// but TLS settings were given`, "mix http:// and https://", "a password without a user"} {
		if !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want ErrInvalidArgument naming %q", err, want)
		}
	}
	if err := (etcd.Connection{Endpoints: []string{"a:1"}, User: "bob:pw"}).Validate(); err != nil {
		t.Errorf("user:password: %v", err)
	}
	if _, err := (etcd.Connection{Endpoints: []string{"127.0.0.1:1"}, CACert: notPEM}).Dial(nil); !errors.Is(err, shard.ErrInvalidArgument) || !strings.Contains(err.Error(), notPEM) {
		t.Errorf("Dial with a CA file that is not PEM = %v, want ErrInvalidArgument naming it", err)
	}
}

// TestDial reaches a real member through Connection.Dial.
func TestDial(t *testing.T) {
	cluster := etcdtest.Start(t)
	c, _ := dialCoordinator(t, etcd.Connection{Endpoints: cluster.Endpoints()})
	cfg, err := c.Fleet().Configure(t.Context(), shard.Config{Shards: 4})
	if err != nil || cfg.Shards != 4 {
		t.Fatalf("Configure through a dialled client = %+v, %v", cfg, err)
	}
}

// TestDialTLS reaches a member that requires TLS and a client certificate
// through Connection's files, as etcdctl's flags name them; without the
// CA or without the client's certificate it is refused.
func TestDialTLS(t *testing.T) {
	cluster := etcdtest.Start(t, etcdtest.WithTLS())
	files := cluster.TLS
	if !strings.HasPrefix(cluster.Endpoints()[0], "https://") {
		t.Fatalf("endpoint %s is not https", cluster.Endpoints()[0])
	}
	configure := func(c etcd.Connection) error {
		c.DialTimeout = 2 * time.Second
		cli, err := c.Dial(nil)
		if err != nil {
			return err
		}
		defer cli.Close()
		co, err := etcd.New(etcd.Config{Client: cli, Prefix: freshPrefix(), RequestTimeout: 3 * time.Second})
		if err != nil {
			return err
		}
		defer co.Close()
		_, err = co.Fleet().Configure(t.Context(), shard.Config{Shards: 4})
		return err
	}
	if err := configure(etcd.Connection{Endpoints: cluster.Endpoints(), CACert: files.CA, Cert: files.Cert, Key: files.Key}); err != nil {
		t.Fatalf("with the CA and a client certificate: %v", err)
	}
	if err := configure(etcd.Connection{Endpoints: cluster.Endpoints(), Cert: files.Cert, Key: files.Key}); err == nil {
		t.Error("without the CA: the members' certificate was trusted")
	}
	if err := configure(etcd.Connection{Endpoints: cluster.Endpoints(), CACert: files.CA}); err == nil {
		t.Error("without a client certificate: accepted")
	}
	env := map[string]string{"ETCDCTL_CACERT": files.CA, "ETCDCTL_CERT": files.Cert, "ETCDCTL_KEY": files.Key}
	c := etcd.ConnectionFromEnv(func(k string) string { return env[k] })
	c.Endpoints = cluster.Endpoints()
	if err := configure(c); err != nil {
		t.Fatalf("with etcdctl's variables: %v", err)
	}
}

// TestAuth: on an etcd with authentication on, a user with readwrite on
// the fleet's key range runs it; a wrong password is refused when dialled
// as a permission, not an outage; no user, or another prefix, is refused
// naming what the user needs.
func TestAuth(t *testing.T) {
	cluster := etcdtest.Start(t)
	admin := client(t, cluster)
	ctx := t.Context()
	const prefix = "authfleet"
	steps := []func() error{
		func() error { _, err := admin.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.RoleAdd(ctx, "fleet"); return err },
		func() error {
			_, err := admin.RoleGrantPermission(ctx, "fleet", prefix+"/", clientv3.GetPrefixRangeEnd(prefix+"/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := admin.UserAdd(ctx, "bob", "bobpw"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "bob", "fleet"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("setting up auth, step %d: %v", i, err)
		}
	}
	configure := func(c etcd.Connection, prefix string) error {
		c.Endpoints = cluster.Endpoints()
		cli, err := c.Dial(nil)
		if err != nil {
			return err
		}
		defer cli.Close()
		co, err := etcd.New(etcd.Config{Client: cli, Prefix: prefix, RequestTimeout: 3 * time.Second})
		if err != nil {
			return err
		}
		defer co.Close()
		_, err = co.Fleet().Configure(ctx, shard.Config{Shards: 4})
		return err
	}
	if err := configure(etcd.Connection{User: "bob:bobpw"}, prefix); err != nil {
		t.Fatalf("bob on his fleet: %v", err)
	}
	if err := configure(etcd.Connection{User: "bob", Password: "wrong"}, prefix); !errors.Is(err, shard.ErrPermissionDenied) || errors.Is(err, shard.ErrUnavailable) {
		t.Errorf("a wrong password = %v, want ErrPermissionDenied (not an outage)", err)
	}
	for _, tc := range []struct {
		c      etcd.Connection
		prefix string
	}{{etcd.Connection{}, prefix}, {etcd.Connection{User: "bob:bobpw"}, "elsewhere"}} {
		err := configure(tc.c, tc.prefix)
		if !errors.Is(err, shard.ErrPermissionDenied) || !strings.Contains(err.Error(), `readwrite on the key range "`+tc.prefix+`/"`) {
			t.Errorf("user %q on %s = %v, want ErrPermissionDenied naming the range", tc.c.User, tc.prefix, err)
		}
	}
}

// TestRequestCounter counts what a session costs: its creation is a lease
// grant and a put, each renewal one keep-alive message.
func TestRequestCounter(t *testing.T) {
	cluster := etcdtest.Start(t)
	var rc etcd.RequestCounter
	c, cli := dialCoordinator(t, etcd.Connection{Endpoints: cluster.Endpoints(), Requests: &rc})
	id, err := c.Sessions().Create(t.Context(), shard.SessionSpec{Worker: "w", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := c.Sessions().Renew(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int64{"/etcdserverpb.Lease/LeaseGrant": 1, "/etcdserverpb.KV/Put": 1, "/etcdserverpb.Lease/LeaseKeepAlive": 3}
	got := rc.Counts()
	for m, n := range want {
		if got[m] != n {
			t.Errorf("%s: %d requests, want %d (all: %v)", m, got[m], n, got)
		}
	}
	if rc.Total() != 5 {
		t.Errorf("%d requests in all, want 5: %v", rc.Total(), got)
	}

	// Received counts what comes back: a 10,000-byte value read once is
	// that value, its key and the reply's header, framed.
	value := strings.Repeat("v", 10000)
	if _, err := cli.Put(t.Context(), "counted", value); err != nil {
		t.Fatal(err)
	}
	before := rc.Received()
	if _, err := cli.Get(t.Context(), "counted"); err != nil {
		t.Fatal(err)
	}
	if n := rc.Received() - before; n < 10000 || n > 10100 {
		t.Errorf("a Get of a 10,000-byte value received %d bytes, want 10,000 and its key, header and framing (under 10,100)", n)
	}
	// And a watch's events, received on a stream.
	put, err := cli.Put(t.Context(), "watched", value)
	if err != nil {
		t.Fatal(err)
	}
	before = rc.Received()
	<-cli.Watch(t.Context(), "watched", clientv3.WithRev(put.Header.Revision))
	if n := rc.Received() - before; n < 10000 {
		t.Errorf("a watch event of a 10,000-byte value received %d bytes, want at least 10,000", n)
	}
}

package etcdtest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/shardlease/shardlease/internal/freeport"
	"github.com/shardlease/shardlease/internal/harness/tb"
)

// attempts is how many times a start is tried, each time on fresh ports:
// a port picked free may be taken before etcd binds it.
const attempts = 3

// Cluster is a set of etcd members that form one cluster.
type Cluster struct {
	Members []*Member
	// TLS is set for a cluster started WithTLS: its clients must use
	// these files (the members' client URLs are https:// and ask for a
	// client certificate).
	TLS *TLSFiles

	tlsDir string // where the certificates are, removed by Close
}

// Option changes how a cluster is started.
type Option func(*options)

type options struct{ tls bool }

// WithTLS starts the members with TLS on their client URLs (https://),
// certificates signed by a CA of the cluster's own, and client
// certificates required: Cluster.TLS names the files a client needs.
func WithTLS() Option { return func(o *options) { o.tls = true } }

// Endpoints are the members' client URLs, as a client's endpoints.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.Members))
	for i, m := range c.Members {
		out[i] = m.ClientURL
	}
	return out
}

// Start starts a single-member cluster for the test, stopped and removed
// on t.Cleanup.
func Start(t tb.T, opts ...Option) *Cluster { return StartCluster(t, 1, opts...) }

// StartCluster starts an n-member cluster for the test (three for a real
// quorum), stopped and removed on t.Cleanup; it returns once every member
// is healthy.
func StartCluster(t tb.T, n int, opts ...Option) *Cluster {
	t.Helper()
	c, err := Launch(n, opts...)
	if err != nil {
		t.Fatalf("etcdtest: %v (integration tests require etcd and never skip)", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range c.Members {
				t.Logf("etcdtest: %s:\n%s", m.LogPath(), tail(m.LogPath(), 3000))
			}
		}
		if err := c.Close(); err != nil {
			t.Errorf("etcdtest: %v", err)
		}
	})
	return c
}

// Launch starts an n-member cluster outside a test (a benchmark's); the
// caller stops it with Close. On error nothing is left behind.
func Launch(n int, opts ...Option) (*Cluster, error) { return launch(n, freeport.Pick, opts...) }

// launch is Launch with the ports drawn by pick (tests rig it).
func launch(n int, pick func(n int) ([]int, error), opts ...Option) (*Cluster, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if n < 1 {
		return nil, fmt.Errorf("a cluster of %d members: want at least 1", n)
	}
	bin, err := FindBinary()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		c, err := start(bin, n, pick, o)
		if err == nil {
			return c, nil
		}
		if !isExited(err) || attempt == attempts {
			return nil, fmt.Errorf("etcd did not start in %d attempt(s): %w", attempt, err)
		}
	}
}

// start makes the members' directories and processes and waits until the
// cluster is healthy; on error it stops and removes what it started.
func start(bin string, n int, pick func(n int) ([]int, error), o options) (*Cluster, error) {
	ports, err := pick(2 * n)
	if err != nil {
		return nil, err
	}
	// Names unique across clusters, so that a member's readiness check
	// cannot be answered by another cluster's member of the same name.
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	suffix := hex.EncodeToString(b)
	token := "etcdtest-" + suffix
	c := &Cluster{}
	scheme, client := "http", &http.Client{Timeout: 2 * time.Second}
	var serverCert, serverKey string
	if o.tls {
		dir, err := os.MkdirTemp("", "etcdtest-tls-")
		if err != nil {
			return nil, err
		}
		c.tlsDir = dir
		files, cert, key, err := makeTLS(dir)
		if err == nil {
			client, err = httpsClient(files)
		}
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("etcdtest: certificates: %w", err)
		}
		c.TLS, scheme, serverCert, serverKey = &files, "https", cert, key
	}
	var initial []string
	for i := range n {
		dir, err := os.MkdirTemp("", "etcdtest-")
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		m := &Member{Name: fmt.Sprintf("m%d-%s", i+1, suffix), Dir: dir, bin: bin, token: token,
			ClientURL: fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[2*i]), PeerURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			http: client}
		if c.TLS != nil {
			m.tlsArgs = []string{"--cert-file", serverCert, "--key-file", serverKey, "--trusted-ca-file", c.TLS.CA, "--client-cert-auth"}
		}
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	for _, m := range c.Members {
		m.cluster = strings.Join(initial, ",")
		if err := m.start(true); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	if err := waitHealthy(readyWithin, c.Members...); err != nil {
		var logs []string
		for _, m := range c.Members {
			logs = append(logs, fmt.Sprintf("%s (%s):\n%s", m.Name, m.LogPath(), tail(m.LogPath(), 1500)))
		}
		_ = c.Close()
		return nil, fmt.Errorf("%w\n%s", err, strings.Join(logs, "\n"))
	}
	return c, nil
}

// Leader returns the member that is the cluster's Raft leader, as the
// running members report it, waiting up to within for one to be elected.
func (c *Cluster) Leader(within time.Duration) (*Member, error) {
	deadline := time.Now().Add(within)
	for {
		var last error
		for _, m := range c.Members {
			if !m.Running() {
				continue
			}
			st, err := m.Status()
			if err != nil {
				last = err
				continue
			}
			for _, l := range c.Members {
				if l.Running() && st.Leader != 0 {
					if ls, err := l.Status(); err == nil && ls.ID == st.Leader {
						return l, nil
					}
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("etcdtest: no leader among the running members within %v (last: %v)", within, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Close stops every member and removes their directories.
func (c *Cluster) Close() error {
	var errs []error
	for _, m := range c.Members {
		if err := m.stop(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Name, err))
		}
		if err := os.RemoveAll(m.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	if c.tlsDir != "" {
		if err := os.RemoveAll(c.tlsDir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

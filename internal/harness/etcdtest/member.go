package etcdtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardlease/shardlease/internal/harness/shardproc"
)

// EnvBinary names an environment variable that, when set, is the path of
// the etcd binary to use instead of <module root>/bin/etcd.
const EnvBinary = "SHARDLEASE_ETCD"

// readyWithin bounds how long a started cluster may take to be healthy.
const readyWithin = 30 * time.Second

// FindBinary returns the path of the etcd binary: $SHARDLEASE_ETCD, else
// <module root>/bin/etcd. The error says how to build it.
func FindBinary() (string, error) {
	return shardproc.LocateBinary(EnvBinary, "etcd", "`bash scripts/etcd.sh` (or `make etcd`)")
}

// Member is one etcd server process of a cluster.
type Member struct {
	// Name is the member's name (--name), unique in its cluster.
	Name string
	// ClientURL is where clients connect: http://127.0.0.1:<port>.
	ClientURL string
	// PeerURL is where the other members reach it.
	PeerURL string
	// Dir holds the data (Dir/data) and the log (Dir/etcd.log).
	Dir string

	bin     string
	cluster string   // --initial-cluster
	token   string   // --initial-cluster-token
	tlsArgs []string // the client URLs' TLS flags, with WithTLS
	http    *http.Client

	mu   sync.Mutex // guards proc: a fault harness kills and restarts from its own goroutines
	proc *shardproc.Proc
}

// process is the member's current process (nil before its first start).
func (m *Member) process() *shardproc.Proc {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc
}

// LogPath is the member's log file.
func (m *Member) LogPath() string { return filepath.Join(m.Dir, "etcd.log") }

// start starts the member's process; fresh says whether its data
// directory is new (a first start) or holds the member's state (a restart).
func (m *Member) start(fresh bool) error {
	state := "new"
	if !fresh {
		state = "existing"
	}
	args := append([]string{
		"--name", m.Name, "--data-dir", filepath.Join(m.Dir, "data"),
		"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL,
		"--initial-cluster", m.cluster, "--initial-cluster-state", state, "--initial-cluster-token", m.token,
		"--listen-metrics-urls", "", "--log-level", "info"}, m.tlsArgs...)
	cmd := exec.Command(m.bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p, err := shardproc.Launch(cmd, m.LogPath())
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.proc = p
	m.mu.Unlock()
	return nil
}

// Running reports whether the member's process is up.
func (m *Member) Running() bool {
	p := m.process()
	return p != nil && p.Running()
}

// Kill kills the member's process (SIGKILL) and waits for it to exit.
func (m *Member) Kill() {
	p := m.process()
	if p == nil {
		return
	}
	p.Signal(syscall.SIGKILL)
	p.Wait(10 * time.Second)
}

// Restart starts a killed or stopped member again with its data, at its
// old addresses, and waits until it is healthy.
func (m *Member) Restart() error {
	if m.Running() {
		return fmt.Errorf("etcdtest: %s is running", m.Name)
	}
	if err := m.start(false); err != nil {
		return err
	}
	return waitHealthy(readyWithin, m)
}

// Wipe kills a single-member cluster's member and starts it again empty,
// at its old addresses, as an etcd rebuilt from nothing: its revisions
// count from 1 again. It waits until the member is healthy.
func (m *Member) Wipe() error {
	m.Kill()
	if err := os.RemoveAll(filepath.Join(m.Dir, "data")); err != nil {
		return err
	}
	if err := m.start(true); err != nil {
		return err
	}
	return waitHealthy(readyWithin, m)
}

// stop stops the member (SIGTERM, then SIGKILL).
func (m *Member) stop() error {
	p := m.process()
	if p == nil {
		return nil
	}
	return p.Stop(10 * time.Second)
}

// Healthy asks the member's /health: nil when it is a member of a cluster
// with a leader, up to date, and the server answering at ClientURL is
// this member (not another process that holds the port while this one
// fails to bind it).
func (m *Member) Healthy() error {
	if err := m.isSelf(); err != nil {
		return err
	}
	resp, err := m.http.Get(m.ClientURL + "/health")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err := json.Unmarshal(body, &h); err != nil {
		return fmt.Errorf("%s/health: %s", m.ClientURL, body)
	}
	if h.Health != "true" {
		return fmt.Errorf("%s not healthy: %s", m.Name, h.Reason)
	}
	return nil
}

// isSelf checks that the server at ClientURL is the member named Name:
// its member ID is that of the cluster's member of this name.
func (m *Member) isSelf() error {
	st, err := m.Status()
	if err != nil {
		return err
	}
	var list struct {
		Members []struct {
			ID   string `json:"ID"`
			Name string `json:"name"`
		} `json:"members"`
	}
	if err := m.post("/v3/cluster/member/list", map[string]any{}, &list); err != nil {
		return err
	}
	for _, x := range list.Members {
		var id uint64
		if _, err := fmt.Sscan(x.ID, &id); err == nil && x.Name == m.Name {
			if id != st.ID {
				return fmt.Errorf("%s answers as member %x, not %s (%s)", m.ClientURL, st.ID, m.Name, x.ID)
			}
			return nil
		}
	}
	return fmt.Errorf("%s answers for a cluster without a member named %s", m.ClientURL, m.Name)
}

// Status is what a member says of itself and its cluster.
type Status struct {
	ID, Leader uint64
	// Revision is the cluster's current revision as the member has it.
	Revision int64
}

// Status asks the member (/v3/maintenance/status).
func (m *Member) Status() (Status, error) {
	var out struct {
		Header struct {
			MemberID string `json:"member_id"`
			Revision string `json:"revision"`
		} `json:"header"`
		Leader string `json:"leader"`
	}
	if err := m.post("/v3/maintenance/status", map[string]any{}, &out); err != nil {
		return Status{}, err
	}
	var st Status
	if _, err := fmt.Sscan(out.Header.MemberID, &st.ID); err != nil {
		return Status{}, fmt.Errorf("%s: member id %q: %w", m.Name, out.Header.MemberID, err)
	}
	if _, err := fmt.Sscan(out.Leader, &st.Leader); err != nil {
		return Status{}, fmt.Errorf("%s: leader %q: %w", m.Name, out.Leader, err)
	}
	if out.Header.Revision != "" {
		if _, err := fmt.Sscan(out.Header.Revision, &st.Revision); err != nil {
			return Status{}, fmt.Errorf("%s: revision %q: %w", m.Name, out.Header.Revision, err)
		}
	}
	return st, nil
}

// post sends a JSON request to the member's gRPC gateway and decodes the
// answer into out.
func (m *Member) post(path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	resp, err := m.http.Post(m.ClientURL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s%s: %s: %s", m.ClientURL, path, resp.Status, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, out)
}

// waitHealthy polls every member's /health until all are healthy, one
// exits, or within passes.
func waitHealthy(within time.Duration, ms ...*Member) error {
	deadline := time.Now().Add(within)
	for {
		var last error
		for _, m := range ms {
			select {
			case <-m.process().Done():
				return &exitedError{member: m.Name}
			default:
			}
			if err := m.Healthy(); err != nil {
				last = err
			}
		}
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not healthy within %v: %w", within, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exitedError is a member that exited while starting: worth another try
// on other ports.
type exitedError struct{ member string }

func (e *exitedError) Error() string { return e.member + " exited during start-up" }

// tail is the last n bytes of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// isExited reports whether err is a member that exited while starting.
func isExited(err error) bool {
	var e *exitedError
	return errors.As(err, &e)
}

package etcdtest

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/harness/freeporttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// put writes key=value through member m and returns the revision.
func put(t *testing.T, m *Member, key, value string) int64 {
	t.Helper()
	var out struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	in := map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key)), "value": base64.StdEncoding.EncodeToString([]byte(value))}
	if err := m.post("/v3/kv/put", in, &out); err != nil {
		t.Fatalf("put %s through %s: %v", key, m.Name, err)
	}
	st, err := m.Status()
	if err != nil {
		t.Fatal(err)
	}
	return st.Revision
}

// get reads key through member m ("" when missing).
func get(t *testing.T, m *Member, key string) string {
	t.Helper()
	var out struct {
		Kvs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := m.post("/v3/kv/range", map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))}, &out); err != nil {
		t.Fatalf("get %s through %s: %v", key, m.Name, err)
	}
	if len(out.Kvs) == 0 {
		return ""
	}
	v, err := base64.StdEncoding.DecodeString(out.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

// TestSingleMember: a single member is healthy, its own leader, and keeps
// what is written to it.
func TestSingleMember(t *testing.T) {
	c := Start(t)
	m := c.Members[0]
	if l, err := c.Leader(5 * time.Second); err != nil || l != m {
		t.Fatalf("leader %v (%v), want the one member", l, err)
	}
	if rev := put(t, m, "k", "v"); rev < 2 {
		t.Errorf("revision %d after a put, want at least 2", rev)
	}
	if got := get(t, m, "k"); got != "v" {
		t.Errorf("k = %q, want v", got)
	}
}

// TestClusterSurvivesItsLeader: three members elect a leader; killed, it is
// replaced by another, the cluster still serves writes, and the killed
// member started again rejoins with the data written while it was away.
func TestClusterSurvivesItsLeader(t *testing.T) {
	c := StartCluster(t, 3)
	if eps := c.Endpoints(); len(eps) != 3 || !strings.HasPrefix(eps[0], "http://127.0.0.1:") {
		t.Fatalf("endpoints %v", eps)
	}
	old, err := c.Leader(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	old.Kill()
	next, err := c.Leader(15 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if next == old {
		t.Fatalf("the killed %s is still named leader", old.Name)
	}
	put(t, next, "written", "while the old leader was away")
	if err := old.Restart(); err != nil {
		t.Fatalf("restarting %s: %v", old.Name, err)
	}
	if got := get(t, old, "written"); got != "while the old leader was away" {
		t.Errorf("%s after its restart reads %q", old.Name, got)
	}
	if err := waitHealthy(10*time.Second, c.Members...); err != nil {
		t.Fatal(err)
	}
}

// TestLaunchRetriesATakenPort: a client port taken between the pick and
// the bind (here another member's) makes the member exit; the start is
// tried again on fresh ports and comes up.
func TestLaunchRetriesATakenPort(t *testing.T) {
	other := Start(t)
	busy := portOf(t, other.Members[0].ClientURL)
	r := &freeporttest.Rigged{Taken: busy, Times: 1}
	c, err := launch(1, r.Pick)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	if r.Calls() != 2 {
		t.Errorf("%d port picks, want 2 (a failed attempt, then a good one)", r.Calls())
	}
	if c.Members[0].ClientURL == other.Members[0].ClientURL {
		t.Fatal("the new member has the other's address")
	}
}

// TestMissingBinaryIsNamed: a $SHARDLEASE_ETCD naming no binary is an
// error naming it, and a module without bin/etcd one saying how to build
// it; neither is a skip.
func TestMissingBinaryIsNamed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv(EnvBinary, "")
	if _, err := FindBinary(); err == nil || !strings.Contains(err.Error(), "bash scripts/etcd.sh") || !strings.Contains(err.Error(), filepath.Join(dir, "bin", "etcd")) {
		t.Errorf("no bin/etcd: %v, want an error naming it and scripts/etcd.sh", err)
	}
	t.Setenv(EnvBinary, "/nonexistent/etcd")
	_, err := Launch(1)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/etcd") {
		t.Fatalf("Launch without a binary: %v, want an error naming it", err)
	}
}

// portOf is the port of a URL.
func portOf(t *testing.T, url string) int {
	t.Helper()
	var p int
	if _, err := fmt.Sscan(url[strings.LastIndexByte(url, ':')+1:], &p); err != nil {
		t.Fatalf("no port in %s: %v", url, err)
	}
	return p
}

package natstest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shardlease/shardlease/internal/freeport"
	"github.com/shardlease/shardlease/internal/harness/shardproc"
	"github.com/shardlease/shardlease/internal/harness/tb"
)

// EnvBinary names an environment variable that, when set, is the path of
// the nats-server binary to use instead of <module root>/bin/nats-server.
const EnvBinary = "SHARDLEASE_NATS_SERVER"

// readyWithin bounds how long a started server may take to answer.
const readyWithin = 30 * time.Second

// attempts is how many times Launch tries to start the server, each time
// on a fresh port: a port picked free may be taken before the server binds
// it (nats-server then exits at once, logging "address already in use").
const attempts = 3

// Server is one nats-server process.
type Server struct {
	// URL is where clients connect: nats://127.0.0.1:<port>.
	URL string
	// Dir holds the JetStream store (Dir/store) and the log (Dir/nats.log).
	Dir string

	// name is the server's name (-n), unique per Server: the readiness
	// check asks for it, so that another server holding the port (one that
	// drew the same port) is not taken for this one.
	name string
	proc *shardproc.Proc
}

// LogPath is the server's log file.
func (s *Server) LogPath() string { return filepath.Join(s.Dir, "nats.log") }

// Start starts a server for the test, stopped and removed on t.Cleanup.
func Start(t tb.T) *Server {
	t.Helper()
	s, err := Launch()
	if err != nil {
		t.Fatalf("natstest: %v (integration tests require nats-server and never skip)", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(s.LogPath()); err == nil {
				t.Logf("natstest: %s:\n%s", s.LogPath(), tail(b, 4000))
			}
		}
		if err := s.Close(); err != nil {
			t.Errorf("natstest: %v", err)
		}
	})
	return s
}

// Launch starts a server outside a test (a benchmark's); the caller stops
// it with Close. On error nothing is left behind.
func Launch() (*Server, error) { return launch(freeport.Pick) }

// launch is Launch with the port drawn by pick (tests rig it).
func launch(pick func(n int) ([]int, error)) (*Server, error) {
	bin, err := FindBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "natstest-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, name: filepath.Base(dir)}
	for attempt := 1; ; attempt++ {
		if err = s.start(bin, pick); err == nil {
			if err = s.waitReady(); err == nil {
				return s, nil
			}
			_ = s.proc.Stop(5 * time.Second)
		}
		if attempt == attempts {
			log, _ := os.ReadFile(s.LogPath())
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("nats-server did not start in %d attempts: %w\nlog tail:\n%s", attempts, err, tail(log, 2000))
		}
	}
}

// start starts nats-server on a port drawn by pick.
func (s *Server) start(bin string, pick func(n int) ([]int, error)) error {
	ports, err := pick(1)
	if err != nil {
		return err
	}
	port := ports[0]
	cmd := exec.Command(bin, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-n", s.name, "-js", "-sd", filepath.Join(s.Dir, "store"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p, err := shardproc.Launch(cmd, s.LogPath())
	if err != nil {
		return err
	}
	s.proc, s.URL = p, fmt.Sprintf("nats://127.0.0.1:%d", port)
	return nil
}

// waitReady polls with a real connection and a JetStream call until both
// work, the server exits, or readyWithin passes.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(readyWithin)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.proc.Done():
			return errors.New("nats-server exited during start-up")
		default:
		}
		if last = ping(s.URL, s.name); last == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not answering on %s within %v: %v", s.URL, readyWithin, last)
}

// ping connects to url, checks that the server there is the one named
// name, and asks JetStream for the account's information.
func ping(url, name string) error {
	nc, err := nats.Connect(url, nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return err
	}
	defer nc.Close()
	if got := nc.ConnectedServerName(); got != name {
		return fmt.Errorf("%s is server %q, not %q", url, got, name)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

// Close stops the server (SIGTERM, then SIGKILL) and removes its directory.
func (s *Server) Close() error {
	err := s.proc.Stop(10 * time.Second)
	if rerr := os.RemoveAll(s.Dir); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return err
}

// FindBinary returns the path of the nats-server binary:
// $SHARDLEASE_NATS_SERVER, else <module root>/bin/nats-server. The error
// says how to build it.
func FindBinary() (string, error) {
	return shardproc.LocateBinary(EnvBinary, "nats-server", "`bash scripts/nats-server.sh` (or `make nats`)")
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

package pgserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardlease/shardlease/internal/freeport"
)

// Superuser is the cluster's superuser; Server.Password is its password.
const Superuser = "postgres"

// readyWithin bounds how long a started server may take to accept
// connections (crash recovery after Kill included).
const readyWithin = 60 * time.Second

// attempts is how many times Launch tries to start the server, each time
// on a fresh port: a port picked free may be taken before postgres binds it
// (postgres then exits, logging "could not bind ...: Address already in
// use").
const attempts = 3

// Server is one throwaway cluster.
type Server struct {
	// Host and Port are where it listens (TCP, loopback only).
	Host string
	Port int
	// Password of Superuser, random per cluster.
	Password string
	// Dir holds the data directory (Dir/data), the unix sockets, and the
	// server's log (Dir/postgres.log). Removed on stop.
	Dir string
	// Version is the output of `postgres --version`.
	Version string

	bin   string
	owner owner

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited <-chan struct{}
}

// DataDir is the cluster's data directory.
func (s *Server) DataDir() string { return filepath.Join(s.Dir, "data") }

// LogPath is the server's log file.
func (s *Server) LogPath() string { return filepath.Join(s.Dir, "postgres.log") }

// DSN returns a postgres:// URL for database db as the superuser, over TCP.
func (s *Server) DSN(db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(Superuser, s.Password),
		Host:     net.JoinHostPort(s.Host, strconv.Itoa(s.Port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Launch makes, starts and waits for a new cluster; the caller stops and
// removes it with Close. On error nothing is left behind. The server dies
// with this process even if Close is never called.
func Launch() (*Server, error) { return launchWith(freeport.Pick) }

// launchWith is Launch with the port drawn by pick (tests rig it).
func launchWith(pick func(n int) ([]int, error)) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL not found: %v; %s", err, Fix)
	}
	own, err := serverOwner()
	if err != nil {
		return nil, fmt.Errorf("%v; %s", err, Fix)
	}
	// Not t.TempDir: the postgres user must be able to reach the directory,
	// and a test's temp dir sits under directories only root may enter.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{Host: "127.0.0.1", Password: RandomHex(12), Dir: dir, bin: bin, owner: own}
	if err := s.initdb(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		if err = s.startOn(pick); err == nil {
			return s, nil
		}
		s.kill()
		if attempt == attempts {
			err = fmt.Errorf("the server did not start in %d attempts: %w\nlog tail:\n%s", attempts, err, s.LogTail(20))
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
}

// startOn starts postgres on a port drawn by pick and waits until it
// accepts connections.
func (s *Server) startOn(pick func(n int) ([]int, error)) error {
	ports, err := pick(1)
	if err != nil {
		return err
	}
	s.Port = ports[0]
	if err := s.launch(); err != nil {
		return err
	}
	return s.waitReady()
}

// initdb creates the cluster: UTF8, C locale (fast, and the same on every
// machine), scram passwords over TCP, trust on the socket.
func (s *Server) initdb() error {
	if err := os.Chown(s.Dir, s.owner.uid, s.owner.gid); err != nil {
		return fmt.Errorf("chown %s to the postgres user: %w", s.Dir, err)
	}
	pwfile := filepath.Join(s.Dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(s.Password+"\n"), 0o600); err != nil {
		return err
	}
	if err := os.Chown(pwfile, s.owner.uid, s.owner.gid); err != nil {
		return err
	}
	defer os.Remove(pwfile)
	out, err := s.command("initdb", "-D", s.DataDir(), "-U", Superuser, "--pwfile", pwfile,
		"--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--locale=C",
		"--no-sync", "--no-instructions").CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb in %s (as uid %d): %w\n%s", s.DataDir(), s.owner.uid, err, out)
	}
	v, err := s.command("postgres", "--version").Output()
	if err != nil {
		return fmt.Errorf("postgres --version: %w", err)
	}
	s.Version = string(bytes.TrimSpace(v))
	return nil
}

// command runs one of the PostgreSQL binaries as the server's owner.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "PGTZ=UTC")
	// Setpgid: stopping kills the whole group. Pdeathsig (set by Go after
	// the credential change, so it survives it): the server dies with the
	// test binary even if the test is killed before its cleanups run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.owner.cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// launch starts postgres on s.Port, appending to the log.
func (s *Server) launch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("already running")
	}
	cmd := s.command("postgres", "-D", s.DataDir(), "-p", strconv.Itoa(s.Port), "-k", s.Dir,
		"-c", "listen_addresses="+s.Host,
		"-c", "max_connections=300", // every store opens a pool, tests run in parallel
		"-c", "log_min_messages=warning",
	)
	exited, err := start(cmd, s.LogPath())
	if err != nil {
		return err
	}
	s.cmd, s.exited = cmd, exited
	return nil
}

// waitReady polls with a real login until it works, the server exits, or
// readyWithin passes.
func (s *Server) waitReady() error {
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	deadline := time.Now().Add(readyWithin)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("postgres exited during start-up")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var conn *pgx.Conn
		conn, last = pgx.Connect(ctx, s.DSN("postgres"))
		if last == nil {
			last = conn.Ping(ctx)
			_ = conn.Close(ctx)
		}
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not accepting connections on port %d within %v: %v", s.Port, readyWithin, last)
}

// Stop shuts the server down the way `pg_ctl stop -m fast` does (SIGINT:
// roll back open transactions, checkpoint, exit) and waits for it. The data
// directory stays, so Restart can bring the same cluster back.
func (s *Server) Stop() error { return s.stop(syscall.SIGINT) }

// Kill stops the server at once with SIGKILL, as a crash would: the next
// start runs crash recovery from the WAL.
func (s *Server) Kill() { s.kill() }

// Restart starts a stopped or killed server again on the same port and data
// directory and waits until it accepts connections.
func (s *Server) Restart() error {
	_ = s.stop(syscall.SIGINT)
	if err := s.launch(); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if err := s.waitReady(); err != nil {
		return fmt.Errorf("restart: %w\nlog tail:\n%s", err, s.LogTail(20))
	}
	return nil
}

// Running reports whether the server process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// stop sends sig to the postmaster and waits up to 30 s, then kills the
// process group.
func (s *Server) stop(sig syscall.Signal) error {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		return fmt.Errorf("postgres (pid %d) ignored %v for 30 s and was killed", cmd.Process.Pid, sig)
	}
}

func (s *Server) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	// A crash kills every process of the server at once. The postmaster's
	// children are in sessions of their own (PostgreSQL calls setsid), so
	// killing its process group is not enough: until they exit they hold
	// its shared memory, and a new postmaster refuses to start ("pre-existing
	// shared memory block is still in use"). Stop it so it forks no more,
	// then kill it and every child.
	pid := cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	children := childrenOf(pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for _, c := range children {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	<-exited
	deadline := time.Now().Add(10 * time.Second)
	for _, c := range children {
		for alive(c) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, ok := procStat(p); ok && ppid == pid {
			kids = append(kids, p)
		}
	}
	return kids
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != "Z"
}

// procStat reads state and parent of pid from /proc/<pid>/stat:
// "pid (comm) state ppid ...", where comm may hold spaces and parentheses.
func procStat(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return f[0], ppid, err == nil
}

// Close stops the server (fast shutdown) and removes its directory.
func (s *Server) Close() error {
	err := s.stop(syscall.SIGINT)
	if rerr := os.RemoveAll(s.Dir); rerr != nil {
		err = errors.Join(err, fmt.Errorf("removing %s: %w", s.Dir, rerr))
	}
	return err
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.LogPath())
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// RandomHex returns n random bytes in hex: passwords, database names.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Exec runs sql in database db as the superuser.
func (s *Server) Exec(ctx context.Context, db, sql string, args ...any) error {
	conn, err := pgx.Connect(ctx, s.DSN(db))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// start starts cmd with its output appended to logPath, and returns a
// channel closed once it has exited.
func start(cmd *exec.Cmd, logPath string) (<-chan struct{}, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", strings.Join(cmd.Args, " "), err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	return exited, nil
}

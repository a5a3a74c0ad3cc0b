package fleettest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/shardlease/shardlease/internal/harness/shardproc"
)

// shardd is the path of the shardd binary built for this package's tests.
var shardd string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fleettest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleettest:", err)
		os.Exit(1)
	}
	if shardd, err = shardproc.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "fleettest:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := 0
	func() {
		defer os.RemoveAll(dir)
		// goleak after the tests: every process waiter must have returned.
		code = m.Run()
		if code == 0 {
			if err := goleak.Find(); err != nil {
				fmt.Fprintln(os.Stderr, "fleettest: leaked goroutines:", err)
				code = 1
			}
		}
	}()
	os.Exit(code)
}

// proc is one `shardd worker` process.
type proc struct {
	id      string
	logPath string
	run     *shardproc.Proc
}

// workerArgs are the flags every test worker gets besides its own.
func workerArgs(addr, prefix, id string, shards int, extra ...string) []string {
	return append([]string{"worker", "--consul", addr, "--prefix", prefix, "--id", id,
		"--shards", fmt.Sprint(shards), "--log-level", "info", "--offsets", "memory", "--allow-local-offsets"}, extra...)
}

// startWorker runs shardd with args; its stderr (JSON logs) goes to a file
// in the test's temp dir. The process is stopped (SIGTERM, then SIGKILL) on
// cleanup, and dies with the test binary if the test is killed.
func startWorker(t *testing.T, id string, args []string, env ...string) *proc {
	t.Helper()
	p := &proc{id: id, logPath: filepath.Join(t.TempDir(), id+".log")}
	var err error
	if p.run, err = shardproc.Start(shardd, args, p.logPath, env...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.signal(syscall.SIGTERM)
		if !p.wait(10 * time.Second) {
			p.signal(syscall.SIGKILL)
			p.wait(5 * time.Second)
		}
		if t.Failed() {
			t.Logf("warnings and errors of %s:\n%s\nlast lines:\n%s", p.id, p.troubles(30), p.tail(8))
		}
	})
	return p
}

func (p *proc) signal(sig syscall.Signal) { p.run.Signal(sig) }

// kill9 kills the process at once, as a crash would, and waits for it.
func (p *proc) kill9(t *testing.T) {
	t.Helper()
	p.signal(syscall.SIGKILL)
	if !p.wait(5 * time.Second) {
		t.Fatalf("%s did not die after SIGKILL", p.id)
	}
}

// wait waits up to d for the process to exit and reports whether it did.
func (p *proc) wait(d time.Duration) bool { return p.run.Wait(d) }

func (p *proc) running() bool { return p.run.Running() }

// exit returns when the process exited and how (nil: exit status 0).
func (p *proc) exit() (time.Time, error) { return p.run.Exit() }

// logLine is one JSON log line of a worker.
type logLine struct {
	Level  string  `json:"level"`
	TS     float64 `json:"ts"`
	Msg    string  `json:"msg"`
	Worker string  `json:"worker"`
	Shard  string  `json:"shard"`
	Token  uint64  `json:"token"`
	Error  string  `json:"error"`
	Addr   string  `json:"addr"`
	raw    string
}

func (l logLine) at() time.Time {
	sec := int64(l.TS)
	return time.Unix(sec, int64((l.TS-float64(sec))*1e9))
}

// lines parses the process's log so far; lines that are not JSON (a panic)
// are kept with only raw set.
func (p *proc) lines() []logLine {
	f, err := os.Open(p.logPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []logLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			l = logLine{}
		}
		l.raw = sc.Text()
		out = append(out, l)
	}
	return out
}

// find returns the log lines whose message contains msg.
func (p *proc) find(msg string) []logLine {
	var out []logLine
	for _, l := range p.lines() {
		if strings.Contains(l.Msg, msg) {
			out = append(out, l)
		}
	}
	return out
}

// waitLog waits up to d for a log line whose message contains msg.
func (p *proc) waitLog(t *testing.T, msg string, d time.Duration) logLine {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if ls := p.find(msg); len(ls) > 0 {
			return ls[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s logged no %q within %v; log tail:\n%s", p.id, msg, d, p.tail(15))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// troubles returns the first n warning and error lines of the log.
func (p *proc) troubles(n int) string {
	var b strings.Builder
	for _, l := range p.lines() {
		if l.Level == "warn" || l.Level == "error" || l.Level == "" {
			if n--; n < 0 {
				b.WriteString("…\n")
				break
			}
			b.WriteString(l.raw)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func (p *proc) tail(n int) string {
	ls := p.lines()
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.raw)
		b.WriteByte('\n')
	}
	return b.String()
}

// eventually polls cond every 50 ms until it returns true or d passes, and
// returns how long that took and whether cond held.
func eventually(ctx context.Context, d time.Duration, cond func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if cond() {
			return time.Since(start), true
		}
		if time.Since(start) > d || ctx.Err() != nil {
			return time.Since(start), false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

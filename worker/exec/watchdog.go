package exec

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	osexec "os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The watchdog is the children's dead man's switch. A Supervisor's worker
// stops its children when its lease's local deadline passes, but only
// while its own process runs: a supervisor stopped (SIGSTOP), stalled in
// the kernel or starved of CPU past the deadline would leave them running
// beside the next owner's. So every Supervisor also starts a second
// process, its program re-executed with envWatchdog set (init below runs
// the watchdog instead of the program), and tells it each child's process
// group and, again and again, the monotonic time until which the group may
// run: the claim's deadline. The watchdog SIGKILLs a group whose time has
// passed, and every group it holds once the supervisor's end of the pipe
// closes (the supervisor exited or was killed). The monotonic clock is the
// machine's (CLOCK_MONOTONIC), the same in both processes and never set
// back.
const envWatchdog = "SHARDLEASE_EXEC_WATCHDOG"

func init() {
	if os.Getenv(envWatchdog) != "1" {
		return
	}
	// This process is a Supervisor's watchdog, not the program: run it and
	// exit, before the program's main. A write to a closed stderr (the
	// supervisor read it and died) must not kill it before it has killed
	// the children.
	signal.Ignore(syscall.SIGPIPE)
	fmt.Fprintln(os.Stdout, watchdogHello)
	runWatchdog(os.Stdin, os.Stderr)
	os.Exit(0)
}

// watchdogHello is the line a watchdog writes first on its stdout: the
// supervisor's proof that the program it started is a watchdog (and not,
// say, a build without one that now sits at the program's path).
const watchdogHello = "shardlease-watchdog 1"

// self is the file to run as this program's watchdog: on Linux the
// running program itself (/proc/self/exe), even if its path now holds
// another build.
func self() (string, error) {
	if runtime.GOOS == "linux" {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

// monotonic is CLOCK_MONOTONIC now, in nanoseconds.
func monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return time.Now().UnixNano() // cannot fail on a system this package builds on
	}
	return ts.Nano()
}

// watchdogRenewEvery is how often a Supervisor renews a running child's
// time with its watchdog: the claim's deadline moves with each renewal of
// the lease (seconds apart), so a few renewals per second keep the
// watchdog's copy current well before the old deadline.
const watchdogRenewEvery = 200 * time.Millisecond

// watched is one process group the watchdog holds.
type watched struct {
	until int64 // monotonic ns
	shard string
}

// runWatchdog reads lines "<pgid> <until> <shard>" from r (until in
// monotonic ns; 0 releases the group: its child was reaped) and kills
// each group whose time has passed, and all of them at the end of r. It
// writes what it killed to errw.
func runWatchdog(r io.Reader, errw io.Writer) {
	type line struct {
		pgid int
		w    watched
	}
	lines := make(chan line)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			f := strings.SplitN(sc.Text(), " ", 3)
			if len(f) != 3 {
				continue
			}
			pgid, err1 := strconv.Atoi(f[0])
			until, err2 := strconv.ParseInt(f[1], 10, 64)
			if err1 != nil || err2 != nil || pgid <= 1 {
				continue
			}
			lines <- line{pgid, watched{until, f[2]}}
		}
	}()
	groups := map[int]watched{}
	// killAll kills every group in due first and says so after: a write
	// that blocks or fails must not spare a group.
	killAll := func(due []int, why string) {
		shards := make([]string, len(due))
		for i, pgid := range due {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			shards[i] = groups[pgid].shard
			delete(groups, pgid)
		}
		for i, pgid := range due {
			fmt.Fprintf(errw, "shardlease watchdog: SIGKILL to the process group %d of shard %s: %s\n", pgid, shards[i], why)
		}
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var next int64
		for _, w := range groups {
			if next == 0 || w.until < next {
				next = w.until
			}
		}
		wait := time.Hour
		if next != 0 {
			wait = time.Duration(max(next-monotonic(), 0))
		}
		timer.Reset(wait)
		select {
		case l, ok := <-lines:
			if !ok {
				killAll(slices.Collect(maps.Keys(groups)), "its supervisor is gone")
				return
			}
			if l.w.until == 0 {
				delete(groups, l.pgid)
			} else {
				groups[l.pgid] = l.w
			}
		case <-timer.C:
			now := monotonic()
			var due []int
			for pgid, w := range groups {
				if w.until <= now {
					due = append(due, pgid)
				}
			}
			killAll(due, "its supervisor did not renew the claim's deadline (stopped or stalled past it)")
		}
	}
}

// watchdog is a Supervisor's end of its watchdog process, which runs
// while the Supervisor has children it holds.
type watchdog struct {
	mu     sync.Mutex
	in     io.WriteCloser // nil while not running
	groups int            // groups held (hold, not yet released)
	stderr io.Writer      // where a restarted watchdog writes
}

// hold starts the watchdog if it is not running and counts one more group
// for it; release gives it back.
func (d *watchdog) hold(stderr io.Writer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.in == nil {
		if err := d.start(stderr); err != nil {
			return err
		}
	}
	d.groups++
	d.stderr = stderr
	return nil
}

// watchdogHelloWithin bounds how long a watchdog may take to say hello.
const watchdogHelloWithin = 10 * time.Second

// start starts the watchdog process; d.mu is held.
func (d *watchdog) start(stderr io.Writer) error {
	exe, err := self()
	if err != nil {
		return fmt.Errorf("finding this program to run its watchdog: %w", err)
	}
	cmd := osexec.Command(exe)
	cmd.Env = append(os.Environ(), envWatchdog+"=1")
	cmd.Stderr = stderr
	// Its own process group, so that a Ctrl-C on the terminal does not
	// stop it before the supervisor has stopped the children in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("starting the watchdog: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("starting the watchdog: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the watchdog: %w", err)
	}
	hello := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		hello <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case got := <-hello:
		if got != watchdogHello {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return fmt.Errorf("starting the watchdog: %s is not a shardlease program with a watchdog (it said %q)", exe, got)
		}
	case <-time.After(watchdogHelloWithin):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("starting the watchdog: %s did not answer within %v", exe, watchdogHelloWithin)
	}
	go func() { _ = cmd.Wait() }() // it exits once its pipe is closed
	d.in = in
	return nil
}

// renew tells the watchdog that group pgid (shard's child) may run until
// deadline.
func (d *watchdog) renew(pgid int, deadline time.Time, shard string) error {
	until := max(monotonic()+int64(time.Until(deadline)), 1)
	return d.send(pgid, until, shard)
}

// release tells the watchdog to forget group pgid (its child was reaped),
// and stops the watchdog when it holds no group any more.
func (d *watchdog) release(pgid int, shard string) error {
	err := d.send(pgid, 0, shard)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.groups--; d.groups == 0 && d.in != nil {
		_ = d.in.Close() // it kills what it still holds (nothing) and exits
		d.in = nil
	}
	return err
}

// send writes one line to the watchdog. A watchdog that is gone (killed
// by someone) is started again, and the line sent to the new one: the
// groups it held come back with their next renewal.
func (d *watchdog) send(pgid int, until int64, shard string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.in == nil {
		return fmt.Errorf("the watchdog is not running")
	}
	line := fmt.Sprintf("%d %d %s\n", pgid, until, shard)
	if _, err := io.WriteString(d.in, line); err == nil {
		return nil
	}
	_ = d.in.Close()
	d.in = nil
	if err := d.start(d.stderr); err != nil {
		return err
	}
	_, err := io.WriteString(d.in, line)
	return err
}

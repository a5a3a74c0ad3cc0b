package consultest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// attempts is how many times a start whose agent exits or fails to bind is
// tried, each time with fresh ports: ports are checked free before the
// agents bind them, and another process may take one in between.
const attempts = 3

// startFailure is an agent that exited during start-up or logged a bind
// failure: worth another try on other ports.
type startFailure struct {
	agent, log string
	exited     bool
	// line is the log's bind error line ("" if none); tail the log's last
	// lines when there is no such line.
	line, tail string
}

func (e *startFailure) Error() string {
	what := "logged a bind failure"
	if e.exited {
		what = "exited"
	}
	if e.line != "" {
		return fmt.Sprintf("%s %s during start-up; its log (%s) says: %s", e.agent, what, e.log, e.line)
	}
	return fmt.Sprintf("%s %s during start-up; last lines of %s:\n%s", e.agent, what, e.log, e.tail)
}

// failure returns a *startFailure when the agent's current process has
// exited or its log, since that process started, has a bind error line;
// otherwise nil.
func (a *Agent) failure() error {
	a.mu.Lock()
	exited, from := a.exited, a.logFrom
	a.mu.Unlock()
	gone := false
	if exited != nil {
		select {
		case <-exited:
			gone = true
		default:
		}
	}
	line := bindError(a.LogPath, from)
	if !gone && line == "" {
		return nil
	}
	f := &startFailure{agent: a.Name, log: a.LogPath, exited: gone, line: line}
	if line == "" {
		f.tail = a.LogTail(20)
	}
	return f
}

// bindError returns the first line of the log at path, from offset on,
// that reports a failed bind ("" if none or unreadable).
func bindError(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := sc.Text(); strings.Contains(l, "bind: ") || strings.Contains(l, "address already in use") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// watchStart returns a context derived from ctx that is cancelled, with
// the *startFailure as its cause, as soon as one of agents fails as
// failure reports, and a func that stops watching.
func watchStart(ctx context.Context, agents []*Agent) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, a := range agents {
				if err := a.failure(); err != nil {
					cancel(err)
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return ctx, func() { cancel(nil) }
}

// launch starts a set of n agents and waits up to within for them to be
// ready. Each attempt draws 4·n ports with pick, lets plan lay out the
// agents on them (not started; port set i is agent i's), starts them all
// and calls ready, whose context is cancelled when an agent fails. An
// attempt that fails with a *startFailure has its agents killed and is
// retried, at most attempts times in all; any other failure is final.
// retried holds the failures that were retried; on error it is nil, the
// error holding every attempt's failure, and the agents of the last
// attempt are returned, stopped, for their logs.
func launch(n int, within time.Duration, pick func(int) ([]int, error),
	plan func(attempt int, ports [][]int) []*Agent,
	ready func(context.Context, []*Agent) error) (agents []*Agent, retried []error, err error) {
	for attempt := range attempts {
		ports, err := pick(portsPerAgent * n)
		if err != nil {
			return agents, retried, fmt.Errorf("picking free ports: %w", err)
		}
		sets := make([][]int, n)
		for i := range sets {
			sets[i] = ports[portsPerAgent*i : portsPerAgent*(i+1)]
		}
		agents = plan(attempt, sets)
		err = startAll(agents, within, ready)
		if err == nil {
			return agents, retried, nil
		}
		for _, a := range agents {
			a.kill()
		}
		if f := (*startFailure)(nil); !errors.As(err, &f) {
			return agents, retried, err
		}
		retried = append(retried, fmt.Errorf("attempt %d of %d: %w", attempt+1, attempts, err))
	}
	return agents, nil, errors.Join(retried...)
}

// startAll starts agents and waits for ready. When an agent has failed,
// that failure is the error, whatever ready reported (ready may see the
// cancelled context, or the HTTP API of a server whose peer died, first).
func startAll(agents []*Agent, within time.Duration, ready func(context.Context, []*Agent) error) error {
	for _, a := range agents {
		if err := a.start(); err != nil {
			return fmt.Errorf("starting %s: %w", a.Name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	ctx, stop := watchStart(ctx, agents)
	defer stop()
	err := ready(ctx, agents)
	if err == nil {
		return nil
	}
	for _, a := range agents {
		if f := a.failure(); f != nil {
			return f
		}
	}
	return err
}

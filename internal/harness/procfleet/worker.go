package procfleet

import (
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/shardlease/shardlease/internal/harness/shardproc"
)

// Worker is one worker ID of a fleet and its processes, one at a time.
type Worker struct {
	ID string
	// History is the worker's history file; every process of the worker
	// appends to it. Log is its output.
	History, Log string

	f    *Fleet
	args []string
	bin  string // the binary of the next Start; "" for the fleet's

	mu    sync.Mutex
	p     *shardproc.Proc
	done  <-chan struct{} // the current process exited and its history was read
	lives []life
}

// life is one process of a worker: when it was started, and the process,
// which knows when it exited.
type life struct {
	started time.Time
	p       *shardproc.Proc
}

// Life is when one process of a worker ran: from just before it was
// started to when it was seen to exit (Exit zero: still running).
type Life struct {
	Start, Exit time.Time
}

// UseBinary makes the worker's next processes run bin instead of the
// fleet's binary (another release of shardd, taking the same arguments).
func (w *Worker) UseBinary(bin string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bin = bin
}

// Start starts another process of the worker, with the arguments it was
// added with: after a kill or a stop, under the same ID. It is an error
// while one is running.
func (w *Worker) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.p != nil && w.p.Running() {
		return fmt.Errorf("procfleet: %s is running already", w.ID)
	}
	bin := w.f.cfg.Bin
	if w.bin != "" {
		bin = w.bin
	}
	started := time.Now()
	p, err := shardproc.Start(bin, w.args, w.Log)
	if err != nil {
		return err
	}
	w.p, w.done = p, p.Done()
	if w.f.cfg.FollowStarts {
		followed := make(chan struct{})
		go func() {
			defer close(followed)
			followStarts(w.History, &w.f.starts, p.Done())
		}()
		w.done = followed
	}
	w.lives = append(w.lives, life{started: started, p: p})
	return nil
}

func (w *Worker) proc() (*shardproc.Proc, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.p, w.done
}

// Signal sends sig to the current process, if it is running.
func (w *Worker) Signal(sig syscall.Signal) {
	if p, _ := w.proc(); p != nil {
		p.Signal(sig)
	}
}

// Running reports whether the worker has a process running.
func (w *Worker) Running() bool {
	p, _ := w.proc()
	return p != nil && p.Running()
}

// Done is closed when the current process has exited and, with
// Config.FollowStarts, its history has been read to the end.
func (w *Worker) Done() <-chan struct{} {
	if _, done := w.proc(); done != nil {
		return done
	}
	closed := make(chan struct{})
	close(closed)
	return closed
}

// Kill kills the current process with SIGKILL and waits up to within for
// it to die.
func (w *Worker) Kill(within time.Duration) error {
	p, _ := w.proc()
	if p == nil {
		return nil
	}
	p.Signal(syscall.SIGKILL)
	if !p.Wait(within) {
		return fmt.Errorf("procfleet: %s did not die within %v of SIGKILL", w.ID, within)
	}
	return nil
}

// Stop continues the current process if it was stopped, asks it to drain
// (SIGTERM), kills it if it has not exited within within, and waits until
// Done.
func (w *Worker) Stop(within time.Duration) error {
	p, done := w.proc()
	if p == nil {
		return nil
	}
	err := p.Stop(within)
	<-done
	return err
}

// Lives is when each of the worker's processes ran, in order.
func (w *Worker) Lives() []Life {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]Life, 0, len(w.lives))
	for _, l := range w.lives {
		var exit time.Time
		if !l.p.Running() {
			exit, _ = l.p.Exit()
		}
		out = append(out, Life{Start: l.started, Exit: exit})
	}
	return out
}

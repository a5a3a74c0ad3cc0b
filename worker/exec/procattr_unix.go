//go:build unix && !linux

package exec

import "syscall"

// procAttr puts a child in its own process group, so that signals reach
// everything it started and a Ctrl-C on the terminal reaches the
// supervisor alone. Without Pdeathsig (Linux only) a child outlives a
// supervisor killed with SIGKILL.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

package exec

import "syscall"

// procAttr puts a child in its own process group, so that signals reach
// everything it started and a Ctrl-C on the terminal reaches the
// supervisor alone (which then stops the children in order). Pdeathsig:
// if the supervisor itself dies, the child dies with it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

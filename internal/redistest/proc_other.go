//go:build !linux

package redistest

import "syscall"

// sysProcAttr has no parent-death signal outside Linux; servers are still
// stopped by Close/Main, but may outlive a test binary that is killed hard.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{}
}

// processAlive conservatively reports every process as alive, so stale temp
// dirs are never swept where liveness cannot be checked the Linux way.
func processAlive(pid int) bool { return true }

//go:build linux

package redistest

import "syscall"

// sysProcAttr makes the kernel SIGKILL the redis-server when the test binary
// dies, so a crashed, timed-out or ^C'd `go test` never leaves servers behind
// holding ports. (Pdeathsig is tied to the spawning OS thread; the Go runtime
// does not retire ordinary threads, so in practice this tracks the process.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// processAlive reports whether pid names a live process (signal 0 probes
// without delivering anything; EPERM still means it exists).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

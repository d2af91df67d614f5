package main

import (
	"syscall"
	"time"
)

// childProcAttr asks the kernel to stop the private redis-server if the
// harness dies without running its cleanup (kill -9, a crash).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// processCPU is this process's user+sys CPU time so far (-stats).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build !linux

package main

import (
	"syscall"
	"time"
)

func childProcAttr() *syscall.SysProcAttr { return nil }

// processCPU is unknown here; -stats then reports 0 for the harness's CPU.
func processCPU() time.Duration { return 0 }

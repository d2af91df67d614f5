//go:build !unix

package rqueue_test

import "time"

// processCPU is unknown here: the benchmarks leave out their CPU time per job.
func processCPU() time.Duration { return 0 }

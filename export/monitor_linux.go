//go:build linux

package main

import (
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// findMonitor samples every thread's current system call
// (/proc/self/task/*/syscall) each interval, for at most d, and returns the
// thread pickMonitor settles on, or 0.
func findMonitor(d, interval time.Duration) int {
	nanosleep := strconv.Itoa(unix.SYS_NANOSLEEP) + " "
	seen := map[int]int{}
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(interval) {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return 0
		}
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/syscall")
			if err != nil || !strings.HasPrefix(string(b), nanosleep) {
				continue
			}
			if tid, err := strconv.Atoi(t.Name()); err == nil {
				seen[tid]++
			}
		}
		if tid := pickMonitor(seen); tid != 0 {
			return tid
		}
	}
	return 0
}

// setThreadNice gives one thread of this process a nice value.
func setThreadNice(tid, nice int) error {
	return unix.Setpriority(unix.PRIO_PROCESS, tid, nice)
}

// threadNice is one thread's nice value.
func threadNice(tid int) (int, error) {
	// The system call returns 20 - nice, so that no valid result is negative.
	p, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	return 20 - p, err
}

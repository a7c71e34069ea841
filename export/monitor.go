package main

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The Go runtime's monitor thread (sysmon) wakes every 20 µs to 10 ms to
// take processors back from threads in system calls (every C thread that
// has called into the library holds one between calls) and to preempt
// long-running goroutines. After a pause it wakes at its fastest pace for a
// few milliseconds: the first call into Go after all processors were idle
// wakes it, and each take-over starts the fast pace again. Each wake-up on
// a core where a rank is running preempts that rank, because the kernel
// favours a thread that slept: on a 2-core VM the first 1 MiB all_reduce
// after 10 ms idle lost 15-20 µs to each of about 7 such preemptions per
// rank (sched_switch traces, 2026-12-03).
//
// Sysmon's work tolerates delay (its own periods are 10 ms), so the library
// lowers that one thread to nice 19 (HCCL_GO_SYSMON_NICE): its wake-ups no
// longer preempt a rank, and it runs when a core is free or a waiting rank
// yields. The runtime does not name the thread. It is the only thread of
// the process that sleeps in the nanosleep system call (the runtime's
// usleep; glibc and CPython sleep through clock_nanosleep), and it is awake
// while a communicator is set up, so the library samples its threads'
// system calls then (monitor_linux.go).

const sysmonNiceVar = "HCCL_GO_SYSMON_NICE"

// defaultSysmonNice is the nice value sysmon gets unless the variable says
// otherwise: the lowest priority there is.
const defaultSysmonNice = 19

// sysmonNice parses HCCL_GO_SYSMON_NICE: 0 leaves the thread alone, 1-19 is
// the nice value to give it.
func sysmonNice(v string) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return defaultSysmonNice, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 19 {
		return 0, fmt.Errorf("%s=%q: want a nice value from 0 (leave the thread alone) to 19", sysmonNiceVar, v)
	}
	return n, nil
}

// monitorSearch is how long one search for the thread samples, and how
// often: it usually ends after monitorHits samples; the window is long for
// a loaded machine, where sysmon waits for a core between its sleeps.
const (
	monitorSearch   = 200 * time.Millisecond
	monitorInterval = 500 * time.Microsecond
)

// monitorHits is how many samples must find the same thread in nanosleep,
// with no other thread seen there more than once, before it is taken for
// sysmon (the runtime's scheduler sleeps 3 µs in nanosleep at times).
const monitorHits = 3

// lowering is the process's record of the search: one runs at a time, and
// none after one succeeded.
var lowering struct {
	mu      sync.Mutex
	running bool
	tid     int // the thread lowered (0: none yet)
}

// lowerMonitor starts, unless one ran successfully or is running, a search
// for sysmon that gives it the nice value nice. It runs in the background:
// a communicator's set-up does not wait for it.
func lowerMonitor(nice int) {
	if nice == 0 {
		return
	}
	lowering.mu.Lock()
	defer lowering.mu.Unlock()
	if lowering.running || lowering.tid != 0 {
		return
	}
	lowering.running = true
	go func() {
		tid := findMonitor(monitorSearch, monitorInterval)
		if tid != 0 && setThreadNice(tid, nice) != nil {
			tid = 0
		}
		lowering.mu.Lock()
		lowering.running, lowering.tid = false, tid
		lowering.mu.Unlock()
	}()
}

// loweredMonitor is the thread lowerMonitor lowered (0: none yet).
func loweredMonitor() int {
	lowering.mu.Lock()
	defer lowering.mu.Unlock()
	return lowering.tid
}

// pickMonitor decides from sample counts (thread -> samples that found it in
// nanosleep): the thread seen at least monitorHits times while every other
// was seen at most once, or 0.
func pickMonitor(seen map[int]int) int {
	best, others := 0, 0
	for tid, n := range seen {
		switch {
		case best == 0 || n > seen[best]:
			others = max(others, seen[best])
			best = tid
		default:
			others = max(others, n)
		}
	}
	if best == 0 || seen[best] < monitorHits || others > 1 {
		return 0
	}
	return best
}

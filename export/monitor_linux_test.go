//go:build linux

package main

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// awake keeps a processor busy now and then, so that sysmon polls (it
// sleeps on a note, not in nanosleep, while every processor is idle).
func awake(ctx context.Context) {
	for ctx.Err() == nil {
		deadline := time.Now().Add(200 * time.Microsecond)
		for time.Now().Before(deadline) {
		}
		runtime.Gosched()
	}
}

// TestFindMonitorFindsTheThreadThatSleepsInNanosleep checks the search's
// answer: a thread of this process that keeps being found in nanosleep and
// that is not a thread the test made (those sleep through the runtime's
// timers).
func TestFindMonitorFindsTheThreadThatSleepsInNanosleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go awake(ctx)
	tid := findMonitor(2*time.Second, 100*time.Microsecond)
	require.NotZero(t, tid, "no thread found in nanosleep")
	assert.NotEqual(t, os.Getpid(), tid, "the main thread is not the monitor")
	again := 0
	for range 200 {
		b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/syscall")
		require.NoError(t, err)
		if strings.HasPrefix(string(b), strconv.Itoa(unix.SYS_NANOSLEEP)+" ") {
			again++
		}
		time.Sleep(100 * time.Microsecond)
	}
	assert.Greater(t, again, 20, "thread %d is rarely in nanosleep: not sysmon", tid)
}

func TestLowerMonitorLowersOneThread(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go awake(ctx)
	lowerMonitor(15)
	require.Eventually(t, func() bool { return loweredMonitor() != 0 }, 5*time.Second, time.Millisecond)
	tid := loweredMonitor()
	nice, err := threadNice(tid)
	require.NoError(t, err)
	assert.Equal(t, 15, nice)
	own, err := threadNice(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, 0, own, "the process's main thread keeps its priority")
	lowerMonitor(19) // done once per process
	nice, err = threadNice(tid)
	require.NoError(t, err)
	assert.Equal(t, 15, nice)
}

//go:build linux

package tcp

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hccl-go/hccl-go/transport"
)

// BenchmarkConnectMesh connects a full mesh of n in-process ranks over
// loopback and reports the process's CPU per connection end (a dial or an
// accept with its handshake): topo's scale model calibrates ConnCPU on it
// (docs/scale.md).
func BenchmarkConnectMesh(b *testing.B) {
	for _, n := range []int{16, 32, 64} {
		b.Run(fmt.Sprintf("ranks=%d", n), func(b *testing.B) {
			var cpu time.Duration
			for range b.N {
				before := processCPU()
				eps := connectAll(b, n, Config{Logf: func(string, ...any) {}})
				cpu += processCPU() - before
				closeAll(eps)
			}
			ends := float64(b.N * n * (n - 1))
			b.ReportMetric(float64(cpu.Nanoseconds())/ends, "cpu-ns/conn-end")
		})
	}
}

func processCPU() time.Duration {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

func closeAll(eps []transport.Endpoint) {
	for _, e := range eps {
		_ = e.Close()
	}
}

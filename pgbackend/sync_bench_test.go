package pgbackend

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hccl-go/hccl-go/collectives/reduce"
)

// BenchmarkSyncAllReduce measures the synchronous small-op path the C API
// takes (issue an 8-byte all_reduce, run it inline, wait): its time and
// allocations per op, ranks in this process.
//
//	go test -run '^$' -bench SyncAllReduce -benchmem ./pgbackend
func BenchmarkSyncAllReduce(b *testing.B) {
	for _, hosts := range [][]string{{"h"}, {"h", "h"}} {
		b.Run(fmt.Sprintf("world%d", len(hosts)), func(b *testing.B) {
			b.ReportAllocs()
			benchSmallAllReduces(b, hosts, testConfig(), true)
		})
	}
}

// benchSmallAllReduces connects a rank per host in this process and has
// every rank issue b.N 8-byte all_reduces, each waited for before the next
// (inline: the waiter runs it itself, as the C API's wait does).
func benchSmallAllReduces(b *testing.B, hosts []string, cfg Config, inline bool) {
	cfg.TraceDir = b.TempDir()
	cs := connectAll(&testing.T{}, hosts, cfg)
	defer func() {
		for _, c := range cs {
			_ = c.Destroy()
		}
	}()
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			buf := make([]byte, 8)
			for range b.N {
				w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
				if err == nil {
					if inline {
						w.RunInline()
					}
					err = w.Wait(context.Background(), 10*time.Second)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

package pgbackend

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hccl-go/hccl-go/collectives/reduce"
)

// BenchmarkCheckCost measures an 8-byte all_reduce with and without the
// HCCL_GO_CHECK fingerprint exchange, ranks in this process:
//
//	go test -run '^$' -bench CheckCost -benchtime 2000x ./pgbackend
func BenchmarkCheckCost(b *testing.B) {
	for _, route := range reliabilityRoutes {
		for _, check := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/world2/check=%v", route.name, check), func(b *testing.B) {
				cfg := testConfig()
				cfg.Check, cfg.TraceDir = check, b.TempDir()
				if route.tcp {
					cfg.Transport = "tcp"
				}
				cs := connectAll(&testing.T{}, route.hosts[:2], cfg)
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
			})
		}
	}
}

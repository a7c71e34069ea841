package pgbackend

import (
	"fmt"
	"testing"
)

// BenchmarkCheckCost measures an 8-byte all_reduce with and without the
// HCCL_GO_CHECK fingerprint exchange, ranks in this process:
//
//	go test -run '^$' -bench CheckCost -benchtime 2000x ./pgbackend
func BenchmarkCheckCost(b *testing.B) {
	for _, route := range reliabilityRoutes {
		if route.hier {
			continue // its first two ranks share a host: the arena route again
		}
		for _, check := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/world2/check=%v", route.name, check), func(b *testing.B) {
				cfg := testConfig()
				cfg.Check = check
				if route.tcp {
					cfg.Transport = "tcp"
				}
				benchSmallAllReduces(b, route.hosts[:2], cfg, false)
			})
		}
	}
}

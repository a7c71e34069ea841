package tcp

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
)

var testSecret = []byte("test job secret")

// listenAll opens one loopback listener per rank.
func listenAll(t testing.TB, size int) ([]*Listener, []string) {
	t.Helper()
	ls := make([]*Listener, size)
	addrs := make([]string, size)
	for i := range size {
		l, err := Listen("127.0.0.1:0")
		require.NoError(t, err)
		ls[i], addrs[i] = l, l.Addr()
	}
	return ls, addrs
}

// connectAll connects size ranks over loopback with cfg and closes them at
// the end of the test.
func connectAll(t testing.TB, size int, cfg Config) []transport.Endpoint {
	t.Helper()
	if cfg.Secret == nil {
		cfg.Secret = testSecret
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(format string, args ...any) { t.Logf(format, args...) }
	}
	ls, addrs := listenAll(t, size)
	eps := make([]transport.Endpoint, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for i := range size {
		wg.Go(func() { eps[i], errs[i] = Connect(context.Background(), ls[i], i, addrs, cfg) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, e := range eps {
			if e != nil {
				_ = e.Close()
			}
		}
	})
	for i, err := range errs {
		require.NoError(t, err, fmt.Sprintf("rank %d", i))
	}
	return eps
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

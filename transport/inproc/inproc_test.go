package inproc_test

import (
	"testing"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/inproc"
	"github.com/hccl-go/hccl-go/transport/transporttest"
)

func newGroup(t *testing.T, size int) []transport.Endpoint {
	eps := inproc.NewGroup(size)
	t.Cleanup(func() {
		for _, e := range eps {
			_ = e.Close()
		}
	})
	return eps
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, newGroup)
}

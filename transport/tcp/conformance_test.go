package tcp

import (
	"testing"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/transporttest"
)

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, size int) []transport.Endpoint {
		return connectAll(t, size, Config{})
	})
}

func TestConformanceFourStreams(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, size int) []transport.Endpoint {
		return connectAll(t, size, Config{StreamsPerPeer: 4, MaxFrameBytes: 64 << 10})
	})
}

func TestConformanceLazy(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, size int) []transport.Endpoint {
		return connectAll(t, size, Config{Lazy: true})
	})
}

func TestConformanceLazyFourStreams(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, size int) []transport.Endpoint {
		return connectAll(t, size, Config{Lazy: true, StreamsPerPeer: 4, MaxFrameBytes: 64 << 10})
	})
}

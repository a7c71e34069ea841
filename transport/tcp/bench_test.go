package tcp

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/hccl-go/hccl-go/transport"
)

// BenchmarkTCPSendRecv measures loopback links: one-way throughput of large
// messages (receiver posted, so bodies land in place) and the round trip of
// small messages.
func BenchmarkTCPSendRecv(b *testing.B) {
	// The same traffic over a bare socket, for comparison in the same run.
	for _, size := range []int{64 << 10, 1 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("oneway/raw-socket/%dKiB", size>>10), func(b *testing.B) {
			benchRawSocket(b, size)
		})
	}
	for _, streams := range []int{1, 2, 4} {
		for _, size := range []int{64 << 10, 1 << 20, 16 << 20} {
			b.Run(fmt.Sprintf("oneway/streams=%d/%dKiB", streams, size>>10), func(b *testing.B) {
				benchOneWay(b, connectAll(b, 2, Config{StreamsPerPeer: streams}), size)
			})
		}
	}
	for _, size := range []int{8, 1024} {
		b.Run(fmt.Sprintf("pingpong/%dB", size), func(b *testing.B) {
			benchPingPong(b, context.Background(), connectAll(b, 2, Config{}), size)
		})
	}
	// Collectives pass cancellable contexts: that path must stay cheap too.
	b.Run("pingpong/8B/cancellable-ctx", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		benchPingPong(b, ctx, connectAll(b, 2, Config{}), 8)
	})
}

func benchOneWay(b *testing.B, eps []transport.Endpoint, size int) {
	ctx := context.Background()
	src, dst := make([]byte, size), make([]byte, size)
	b.SetBytes(int64(size))
	b.ResetTimer()
	done := make(chan error, 1)
	go func() {
		for range b.N {
			if err := eps[1].Recv(ctx, 0, 1, dst); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range b.N {
		if err := eps[0].Send(ctx, 1, 1, src); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

func benchPingPong(b *testing.B, ctx context.Context, eps []transport.Endpoint, size int) {
	ping, pong := make([]byte, size), make([]byte, size)
	done := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		for range b.N {
			if err := eps[1].Recv(ctx, 0, 1, pong); err != nil {
				done <- err
				return
			}
			if err := eps[1].Send(ctx, 0, 1, pong); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range b.N {
		if err := eps[0].Send(ctx, 1, 1, ping); err != nil {
			b.Fatal(err)
		}
		if err := eps[0].Recv(ctx, 1, 1, ping); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

func benchRawSocket(b *testing.B, size int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		buf := make([]byte, size)
		for range b.N {
			if _, err := io.ReadFull(c, buf); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	src := make([]byte, size)
	b.SetBytes(int64(size))
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(src); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

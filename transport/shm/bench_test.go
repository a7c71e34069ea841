package shm

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
)

// Benchmarks: one-way throughput and small-message ping-pong, between two
// goroutines of one process (Bench...) and between two processes
// (BenchmarkProc...), with raw TCP loopback for comparison. Run with e.g.
//
//	go test -run '^$' -bench . -benchtime 2s ./transport/shm

var throughputSizes = []int{64 << 10, 1 << 20, 16 << 20}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// Bench control messages, sent by rank 0 to the helper on tag ctlTag.
const (
	ctlTag    transport.Tag = 1 << 40
	dataTag   transport.Tag = 1
	replyTag  transport.Tag = 2
	modeQuit                = 0
	modeSink                = 1 // receive count messages of n bytes, then reply 1 byte
	modePing                = 2 // echo count messages of n bytes
	ctlLength               = 24
)

func sendCtl(ctx context.Context, e transport.Endpoint, mode, n, count int) error {
	var b [ctlLength]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(mode))
	binary.LittleEndian.PutUint64(b[8:], uint64(n))
	binary.LittleEndian.PutUint64(b[16:], uint64(count))
	return e.Send(ctx, 1, ctlTag, b[:])
}

// helperBench is rank 1 of the process benchmarks: it obeys control
// messages until told to quit.
func helperBench(ctx context.Context, e *Endpoint) error {
	var b [ctlLength]byte
	for {
		if err := e.Recv(ctx, 0, ctlTag, b[:]); err != nil {
			return err
		}
		mode := binary.LittleEndian.Uint64(b[0:])
		n := int(binary.LittleEndian.Uint64(b[8:]))
		count := int(binary.LittleEndian.Uint64(b[16:]))
		if mode == modeQuit {
			return nil
		}
		if err := serve(ctx, e, mode, n, count); err != nil {
			return err
		}
	}
}

// serve plays the receiving side of one benchmark round against rank 0.
func serve(ctx context.Context, e transport.Endpoint, mode uint64, n, count int) error {
	buf := make([]byte, n)
	for range count {
		if err := e.Recv(ctx, 0, dataTag, buf); err != nil {
			return err
		}
		if mode == modePing {
			if err := e.Send(ctx, 0, replyTag, buf); err != nil {
				return err
			}
		}
	}
	if mode == modeSink {
		return e.Send(ctx, 0, replyTag, []byte{1})
	}
	return nil
}

// runThroughput sends b.N messages of n bytes to rank 1 of e and waits for
// the final reply.
func runThroughput(b *testing.B, e transport.Endpoint, n int, start func(mode, n, count int)) {
	ctx := context.Background()
	data := pattern(n, 1)
	start(modeSink, n, b.N)
	b.SetBytes(int64(n))
	b.ResetTimer()
	for range b.N {
		require.NoError(b, e.Send(ctx, 1, dataTag, data))
	}
	require.NoError(b, e.Recv(ctx, 1, replyTag, make([]byte, 1)))
}

// runPingPong bounces b.N messages of n bytes off rank 1 and reports the
// one-way latency.
func runPingPong(b *testing.B, e transport.Endpoint, n int, start func(mode, n, count int)) {
	ctx := context.Background()
	buf := make([]byte, n)
	start(modePing, n, b.N)
	b.ResetTimer()
	t0 := time.Now()
	for range b.N {
		require.NoError(b, e.Send(ctx, 1, dataTag, buf))
		require.NoError(b, e.Recv(ctx, 1, replyTag, buf))
	}
	b.ReportMetric(float64(time.Since(t0).Nanoseconds())/float64(b.N)/2/1e3, "µs/one-way")
}

// inProcessPair runs the receiving side in a goroutine of this process.
func inProcessPair(b *testing.B, cfg Config) (transport.Endpoint, func(mode, n, count int), func()) {
	eps := connectAll(b, 2, cfg, true)
	errc := make(chan error, 1)
	start := func(mode, n, count int) {
		go func() { errc <- serve(context.Background(), eps[1], uint64(mode), n, count) }()
	}
	finish := func() { require.NoError(b, <-errc) }
	return eps[0], start, finish
}

func BenchmarkThroughput(b *testing.B) {
	for _, cma := range []bool{false, true} {
		for _, n := range throughputSizes {
			b.Run(fmt.Sprintf("cma=%v/%s", cma, sizeName(n)), func(b *testing.B) {
				e, start, finish := inProcessPair(b, Config{Dir: shmDir(b), DisableCMA: !cma})
				runThroughput(b, e, n, start)
				finish()
			})
		}
	}
}

func BenchmarkPingPong(b *testing.B) {
	for _, n := range []int{8, 4096} {
		b.Run(sizeName(n), func(b *testing.B) {
			e, start, finish := inProcessPair(b, Config{Dir: shmDir(b)})
			runPingPong(b, e, n, start)
			finish()
		})
	}
}

// procPair starts the helper process and connects to it as rank 0.
func procPair(b *testing.B, cma bool) (transport.Endpoint, func(mode, n, count int)) {
	dir, job := shmDir(b), newJobID(b)
	env := []string{}
	if !cma {
		env = append(env, cmaEnv+"=1")
	}
	h := startHelper(b, "bench", job, dir, 1, env...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := Connect(ctx, 0, []int{0, 1}, 2, job, Config{Dir: dir, DisableCMA: !cma})
	require.NoError(b, err)
	b.Cleanup(func() {
		require.NoError(b, sendCtl(context.Background(), e, modeQuit, 0, 0))
		h.wait(b)
		require.NoError(b, e.Close())
	})
	start := func(mode, n, count int) { require.NoError(b, sendCtl(context.Background(), e, mode, n, count)) }
	return e, start
}

func BenchmarkProcThroughput(b *testing.B) {
	for _, cma := range []bool{false, true} {
		for _, n := range throughputSizes {
			b.Run(fmt.Sprintf("cma=%v/%s", cma, sizeName(n)), func(b *testing.B) {
				e, start := procPair(b, cma)
				runThroughput(b, e, n, start)
			})
		}
	}
}

func BenchmarkProcPingPong(b *testing.B) {
	for _, n := range []int{8, 4096} {
		b.Run(sizeName(n), func(b *testing.B) {
			e, start := procPair(b, false)
			runPingPong(b, e, n, start)
		})
	}
}

// tcpPair connects two loopback sockets, the baseline shm has to beat.
func tcpPair(b *testing.B) (net.Conn, net.Conn) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	c1, err := net.Dial("tcp", l.Addr().String())
	require.NoError(b, err)
	c2 := <-accepted
	require.NotNil(b, c2)
	b.Cleanup(func() { c1.Close(); c2.Close() })
	return c1, c2
}

func BenchmarkTCPLoopbackThroughput(b *testing.B) {
	for _, n := range throughputSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			c1, c2 := tcpPair(b)
			done := make(chan error, 1)
			go func() {
				_, err := io.CopyN(io.Discard, c2, int64(n)*int64(b.N))
				done <- err
			}()
			data := pattern(n, 1)
			b.SetBytes(int64(n))
			b.ResetTimer()
			for range b.N {
				_, err := c1.Write(data)
				require.NoError(b, err)
			}
			require.NoError(b, <-done)
		})
	}
}

func BenchmarkTCPLoopbackPingPong(b *testing.B) {
	c1, c2 := tcpPair(b)
	go func() {
		buf := make([]byte, 8)
		for {
			if _, err := io.ReadFull(c2, buf); err != nil {
				return
			}
			if _, err := c2.Write(buf); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 8)
	b.ResetTimer()
	t0 := time.Now()
	for range b.N {
		_, err := c1.Write(buf)
		require.NoError(b, err)
		_, err = io.ReadFull(c1, buf)
		require.NoError(b, err)
	}
	b.ReportMetric(float64(time.Since(t0).Nanoseconds())/float64(b.N)/2/1e3, "µs/one-way")
}

// BenchmarkMemcpy is the ceiling for large transfers: one copy on one core.
func BenchmarkMemcpy(b *testing.B) {
	for _, n := range throughputSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			src, dst := pattern(n, 1), make([]byte, n)
			b.SetBytes(int64(n))
			for range b.N {
				copy(dst, src)
			}
		})
	}
}

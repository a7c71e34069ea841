// Package compression_test runs wire-compressed and sparse all_reduce
// through pgbackend communicators linked by real loopback TCP, as ranks on
// different hosts would be, and reads the traffic counters.
package compression_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/pgbackend"
	"github.com/hccl-go/hccl-go/transport/tcp"
)

// connect builds p communicators over loopback TCP, each rank its own
// "host", with the given options string.
func connect(t *testing.T, p int, options string) []*pgbackend.Communicator {
	t.Helper()
	cfg := pgbackend.DefaultConfig()
	cfg.Timeout = 30 * time.Second
	cfg.ConnectTimeout = 20 * time.Second
	require.NoError(t, cfg.ApplyOptions(options))
	ls := make([]*tcp.Listener, p)
	addrs, hosts := make([]string, p), make([]string, p)
	for i := range p {
		l, err := tcp.Listen("127.0.0.1:0")
		require.NoError(t, err)
		ls[i], addrs[i], hosts[i] = l, l.Addr(), fmt.Sprintf("host%d", i)
	}
	cs := make([]*pgbackend.Communicator, p)
	errs := make([]error, p)
	var wg sync.WaitGroup
	for r := range p {
		wg.Go(func() {
			rv := pgbackend.Rendezvous{Rank: r, Addrs: addrs, HostIDs: hosts, Secret: []byte(t.Name())}
			cs[r], errs[r] = pgbackend.Connect(context.Background(), ls[r], rv, cfg)
		})
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			_ = c.Destroy()
		}
	})
	return cs
}

// onEachRank runs fn on every rank concurrently.
func onEachRank(cs []*pgbackend.Communicator, fn func(c *pgbackend.Communicator) error) []error {
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { errs[i] = fn(c) })
	}
	wg.Wait()
	return errs
}

func waitWork(w interface {
	Wait(context.Context, time.Duration) error
}, err error) error {
	if err != nil {
		return err
	}
	return w.Wait(context.Background(), 30*time.Second)
}

func gradients(rank, n int) []byte {
	rng := rand.New(rand.NewPCG(uint64(rank), 5))
	b := make([]byte, 4*n)
	for i := range n {
		binary.NativeEndian.PutUint32(b[4*i:], math.Float32bits(float32(rng.NormFloat64()*1e-2)))
	}
	return b
}

func f32At(b []byte, i int) float64 {
	return float64(math.Float32frombits(binary.NativeEndian.Uint32(b[4*i:])))
}

// TestCompressedAllReduceOverTCP: 3 ranks on 3 "hosts", fp16 and bf16: the
// averaged result is within p·u·Σ|x|/p of the exact one, identical on every
// rank, and each rank put half the bytes of float32 on the wire.
func TestCompressedAllReduceOverTCP(t *testing.T) {
	const p, n = 3, 150_001
	for _, comp := range []collectives.Compression{collectives.CompressFloat16, collectives.CompressBFloat16} {
		t.Run(string(comp), func(t *testing.T) {
			cs := connect(t, p, "transport=tcp;compression="+string(comp))
			out := make([][]byte, p)
			for r, err := range onEachRank(cs, func(c *pgbackend.Communicator) error {
				out[c.Rank()] = gradients(c.Rank(), n)
				buf := out[c.Rank()]
				return waitWork(c.AllReduce(buf, buf, reduce.Float32, reduce.Avg, 0, pgbackend.StreamDefault))
			}) {
				require.NoError(t, err, "rank %d", r)
			}
			in := make([][]byte, p)
			for r := range p {
				in[r] = gradients(r, n)
				require.Equal(t, out[0], out[r], "rank %d differs", r)
			}
			for i := range n {
				exact, mag := 0.0, 0.0
				for r := range p {
					exact += f32At(in[r], i)
					mag += math.Abs(f32At(in[r], i))
				}
				bound := (p*comp.UnitRoundoff() + 8*math.Pow(2, -24)) * mag / p
				require.LessOrEqual(t, math.Abs(f32At(out[0], i)-exact/p), bound, "element %d", i)
			}
			st := cs[0].Stats()
			full := 2 * (p - 1) * 4 * n / p // float32 ring bytes per rank
			ratio := float64(full) / float64(st.Ops["allreduce"].BytesSent)
			assert.InDelta(t, 2.0, ratio, 0.01, "sent %d bytes", st.Ops["allreduce"].BytesSent)
		})
	}
}

// TestSparseAllReduceOverTCP: integer-valued pairs give the dense sum
// exactly, through the sparse exchange and through the dense switch, and
// the counters show the sparse exchange's bytes are a fraction of dense.
func TestSparseAllReduceOverTCP(t *testing.T) {
	const p, n = 2, 1 << 16
	cs := connect(t, p, "transport=tcp")
	for _, nnz := range []int{n / 100, n} { // 1%: sparse; 100% per rank: dense
		want := make([]float64, n)
		outs := make([][]byte, p)
		for r := range p {
			for j := range nnz {
				want[(j*7+r*13)%n] += float64(j%5 - r)
			}
		}
		before := cs[0].Stats().Ops["sparse_allreduce"].BytesSent
		for r, err := range onEachRank(cs, func(c *pgbackend.Communicator) error {
			r := c.Rank()
			idx := make([]int64, nnz)
			vals := make([]byte, 4*nnz)
			for j := range nnz {
				idx[j] = int64((j*7 + r*13) % n)
				binary.NativeEndian.PutUint32(vals[4*j:], math.Float32bits(float32(j%5-r)))
			}
			outs[r] = make([]byte, 4*n)
			return waitWork(c.SparseAllReduce(idx, vals, reduce.Float32, outs[r], pgbackend.StreamDefault))
		}) {
			require.NoError(t, err, "rank %d", r)
		}
		for r := range p {
			for i := range n {
				require.Equal(t, want[i], f32At(outs[r], i), "nnz %d rank %d element %d", nnz, r, i)
			}
		}
		sent := cs[0].Stats().Ops["sparse_allreduce"].BytesSent - before
		if nnz < n {
			assert.Less(t, sent, int64(4*n/20), "sparse exchange sent %d bytes", sent) // 8 bytes a pair
		} else {
			assert.GreaterOrEqual(t, sent, int64(4*n), "dense all_reduce sent %d bytes", sent)
		}
	}
}

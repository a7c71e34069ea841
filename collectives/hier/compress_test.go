package hier_test

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/hier"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/inproc"
)

// compressedLayouts are the emulated hosts of the compression tests.
var compressedLayouts = []testLayout{
	{"2+2", []int{0, 0, 1, 1}, false},
	{"3+1", []int{0, 0, 0, 1}, false},
	{"1+1+2", []int{0, 1, 2, 2}, false},
	{"2+2 messages", []int{0, 0, 1, 1}, true},
}

// compressedChunk is the wire chunk of the compression tests: small, so
// that a segment's blocks span several chunks, each with its own scale.
const compressedChunk = 1 << 10

// The compressed all_reduce equals, bit for bit on every rank, a reference
// that applies the same quantisation where the algorithm does and nowhere
// else: each host's partial sum exact in float32 (local rank order,
// PreMulSum scaled first), then every segment all_reduced compressed among
// one rank per host, in host order (collectives.AllReduceCompressed over
// in-process links), then Avg's division.
func TestAllReduceCompressedMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		name       string
		roundBytes int // 0: the default, one round
	}{{"one round", 0}, {"rounds", 4096}} {
		t.Run(tc.name, func(t *testing.T) {
			testCompressedMatchesReference(t, tc.roundBytes)
		})
	}
}

func testCompressedMatchesReference(t *testing.T, roundBytes int) {
	for _, l := range compressedLayouts {
		t.Run(l.name, func(t *testing.T) {
			c := newLayoutCluster(t, l)
			p := len(l.hostOf)
			for _, comp := range []collectives.Compression{collectives.CompressFloat16, collectives.CompressBFloat16} {
				for _, op := range []reduce.Op{reduce.Sum, reduce.Avg, reduce.PreMulSum} {
					for _, n := range []int{0, 1, 7, 1001, 5003} {
						inputs := make([][]byte, p)
						for r := range p {
							inputs[r] = gradients(n, r, uint64(n)+uint64(op))
						}
						want := compressedReference(t, l.hostOf, inputs, op, comp, roundBytes)
						outs := make([][]byte, p)
						c.run(t, func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error {
							outs[r] = make([]byte, len(inputs[r]))
							o := collectives.Options{ChunkBytes: compressedChunk, RoundBytes: roundBytes}
							return comm.AllReduceCompressed(ctx, tag, inputs[r], outs[r], reduce.Float32, op, testPreMul, comp, o)
						})
						for r := range p {
							requireSameBytes(t, want, outs[r], "%s %s n=%d rank %d", comp, op, n, r)
						}
					}
				}
			}
		})
	}
}

// The error stays within the documented bound: H roundings to 16 bits of
// each host's partial, relative to the sum of magnitudes (plus float32
// rounding), at the default chunk size; in place.
func TestAllReduceCompressedBound(t *testing.T) {
	for _, l := range compressedLayouts {
		t.Run(l.name, func(t *testing.T) {
			c := newLayoutCluster(t, l)
			p, hosts := len(l.hostOf), slices.Max(l.hostOf)+1
			n := 40_003
			if raceEnabled {
				n = 10_003
			}
			for _, comp := range []collectives.Compression{collectives.CompressFloat16, collectives.CompressBFloat16} {
				inputs := make([][]byte, p)
				for r := range p {
					inputs[r] = gradients(n, r, 3)
				}
				outs := make([][]byte, p)
				c.run(t, func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error {
					outs[r] = slices.Clone(inputs[r])
					return comm.AllReduceCompressed(ctx, tag, outs[r], outs[r], reduce.Float32, reduce.Sum, 0, comp, collectives.Options{})
				})
				for r := 1; r < p; r++ {
					requireSameBytes(t, outs[0], outs[r], "%s: rank %d against rank 0", comp, r)
				}
				rel := float64(hosts)*comp.UnitRoundoff() + float64(p+2)*math.Pow(2, -24)
				got := floats(outs[0])
				for i := range n {
					exact, mag := 0.0, 0.0
					for r := range p {
						x := float64(floats(inputs[r][4*i : 4*i+4])[0])
						exact += x
						mag += math.Abs(x)
					}
					require.LessOrEqual(t, math.Abs(float64(got[i])-exact), rel*mag+1e-30, "%s element %d", comp, i)
				}
			}
		})
	}
}

// Intra-host hops are not compressed. Each rank's value needs more bits
// than the 16-bit format holds, while each host's exact partial sum, and
// the total, fit in it: the hierarchical all_reduce, which rounds only
// host partials, gets the exact total. (Had the three ranks of host 0
// passed their values along rounded, 1+0.375u would have lost its 0.375u,
// and so would each later partial: the total would be 0.5, not 0.5+u.)
// On one host the arena alone runs, exactly, whatever the values.
func TestAllReduceCompressedIntraHostExact(t *testing.T) {
	cases := []struct {
		name   string
		hostOf []int
		values func(u float64) []float64 // per rank; u: the format's spacing in [1, 2)
	}{
		{"3+1", []int{0, 0, 0, 1}, func(u float64) []float64 { return []float64{1 + 0.375*u, 0.375 * u, 0.25 * u, -0.5} }},
		{"one host", []int{0, 0, 0}, func(float64) []float64 { return []float64{1 + 1.0/(1<<20), 1.0 / (1 << 21), -3} }},
	}
	spacing := map[collectives.Compression]float64{collectives.CompressFloat16: 1.0 / (1 << 10), collectives.CompressBFloat16: 1.0 / (1 << 7)}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, tc.hostOf)
			p, n := len(tc.hostOf), 1001
			for comp, u := range spacing {
				values := tc.values(u)
				exact := float32(0)
				for _, v := range values {
					exact += float32(v)
				}
				outs := make([][]byte, p)
				c.run(t, func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error {
					outs[r] = f32s(float32(values[r]), n)
					return comm.AllReduceCompressed(ctx, tag, outs[r], outs[r], reduce.Float32, reduce.Sum, 0, comp, collectives.Options{ChunkBytes: compressedChunk})
				})
				for r := range p {
					for i, x := range floats(outs[r]) {
						require.Equal(t, exact, x, "%s rank %d element %d", comp, r, i)
					}
				}
			}
		})
	}
}

func TestAllReduceCompressedRefuses(t *testing.T) {
	c := newCluster(t, []int{0, 0, 1})
	for _, tc := range []struct {
		dt   reduce.DType
		op   reduce.Op
		comp collectives.Compression
	}{
		{reduce.Float64, reduce.Sum, collectives.CompressFloat16},
		{reduce.Float32, reduce.Max, collectives.CompressBFloat16},
		{reduce.Float32, reduce.Sum, "int8"},
	} {
		for r, err := range c.runErr(t, func(ctx context.Context, r int, comm *hier.Comm, tag transport.Tag) error {
			buf := make([]byte, 64)
			return comm.AllReduceCompressed(ctx, tag, buf, buf, tc.dt, tc.op, 0, tc.comp, collectives.Options{})
		}) {
			require.ErrorIs(t, err, collectives.ErrInvalidArgument, "%v rank %d", tc, r)
		}
	}
}

// compressedReference is the compressed all_reduce computed the way the
// algorithm quantises: exact host partials, then, round by round
// (hier.RoundCuts), each segment (the round cut at every host's piece
// boundaries) all_reduced compressed among the hosts over in-process
// links, then Avg's division.
func compressedReference(t *testing.T, hostOf []int, inputs [][]byte, op reduce.Op, comp collectives.Compression, roundBytes int) []byte {
	t.Helper()
	hosts := slices.Max(hostOf) + 1
	partials := make([][]byte, hosts)
	sizes := make([]int, hosts)
	first, later := reduce.Phases(op)
	for h := range hosts {
		var mine [][]byte
		for r, hr := range hostOf {
			if hr == h {
				mine = append(mine, inputs[r])
			}
		}
		sizes[h] = len(mine)
		partials[h] = reference(reduce.Float32, first, mine)
	}
	n := len(inputs[0]) / 4
	var cuts []int
	rounds := hier.RoundCuts(n, 4, roundBytes)
	for k := 0; k+1 < len(rounds); k++ {
		lo, m := rounds[k], rounds[k+1]-rounds[k]
		for _, r := range sizes {
			for i := range r + 1 {
				cuts = append(cuts, lo+i*(m/r)+min(i, m%r)) // piece bounds, the first m%r one longer
			}
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	out := make([]byte, len(inputs[0]))
	for s := 0; s+1 < len(cuts); s++ {
		lo, hi := 4*cuts[s], 4*cuts[s+1]
		results := make([][]byte, hosts)
		eps := inproc.NewGroup(hosts)
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		var wg sync.WaitGroup
		errs := make([]error, hosts)
		for h, ep := range eps {
			results[h] = slices.Clone(partials[h][lo:hi])
			wg.Go(func() {
				errs[h] = collectives.AllReduceCompressed(ctx, ep, 1, results[h], results[h], reduce.Float32, later, comp, collectives.Options{ChunkBytes: compressedChunk})
			})
		}
		wg.Wait()
		cancel()
		for h, ep := range eps {
			require.NoError(t, errs[h], "reference segment %d host %d", s, h)
			require.NoError(t, ep.Close())
		}
		copy(out[lo:hi], results[0])
	}
	if op == reduce.Avg {
		reduce.DivideBy(reduce.Float32, out, len(hostOf))
	}
	return out
}

// gradients is rank r's n float32 values, gradient-like: normal, of
// magnitudes spread over several decades, whose sums round differently in
// different orders.
func gradients(n, r int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, uint64(r)+1))
	buf := make([]byte, 4*n)
	for i := range n {
		x := rng.NormFloat64() * math.Pow(10, -float64(rng.IntN(4)))
		binary.NativeEndian.PutUint32(buf[4*i:], math.Float32bits(float32(x)))
	}
	return buf
}

func f32s(x float32, n int) []byte {
	buf := make([]byte, 4*n)
	for i := range n {
		binary.NativeEndian.PutUint32(buf[4*i:], math.Float32bits(x))
	}
	return buf
}

func floats(b []byte) []float32 {
	xs := make([]float32, len(b)/4)
	for i := range xs {
		xs[i] = math.Float32frombits(binary.NativeEndian.Uint32(b[4*i:]))
	}
	return xs
}

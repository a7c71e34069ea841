package collectives

import (
	"context"
	"fmt"
	"strings"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// Compression names the wire format of a compressed all_reduce: float32
// data that travels as 16-bit floats, with float32 accumulation at every
// reduction step.
type Compression string

const (
	// NoCompression sends float32 as it is.
	NoCompression Compression = "none"
	// CompressFloat16 sends IEEE binary16, each chunk scaled by a power of
	// two so that its largest magnitude lies in [2^14, 2^15): no overflow,
	// and small gradients keep their precision instead of underflowing.
	CompressFloat16 Compression = "fp16"
	// CompressBFloat16 sends bfloat16 (float32's range, 8 significant
	// bits); no scaling is needed.
	CompressBFloat16 Compression = "bf16"
)

// WireRatio is what a compressed all_reduce puts on the wire per byte of
// float32 payload: 16-bit floats (and a 4-byte header per chunk, which
// this leaves out).
const WireRatio = 0.5

// ParseCompression accepts "none", "fp16" or "bf16" in any case ("" is
// "none").
func ParseCompression(s string) (Compression, error) {
	switch c := Compression(strings.ToLower(strings.TrimSpace(s))); c {
	case "", NoCompression:
		return NoCompression, nil
	case CompressFloat16, CompressBFloat16:
		return c, nil
	default:
		return NoCompression, fmt.Errorf("compression %q: want none, fp16 or bf16", s)
	}
}

// UnitRoundoff is the relative error of one rounding to the wire format:
// 2^-11 for fp16, 2^-8 for bf16, 0 without compression.
func (c Compression) UnitRoundoff() float64 {
	switch c {
	case CompressFloat16:
		return 1.0 / (1 << 11)
	case CompressBFloat16:
		return 1.0 / (1 << 8)
	default:
		return 0
	}
}

// Compressible reports whether an all_reduce of dt under op can travel
// compressed: float32 data reduced by Sum, Avg or PreMulSum. (Max, Min and
// Prod would be changed by the rounding in ways no error bound of a sum
// describes; other types have no narrower float to travel as.)
func Compressible(dt reduce.DType, op reduce.Op) bool {
	return dt == reduce.Float32 && (op == reduce.Sum || op == reduce.Avg || op == reduce.PreMulSum)
}

// AllReduceCompressed is AllReduce for float32 data whose messages carry
// 16-bit floats (see Compression): a ring reduce-scatter and all-gather in
// which every rank receives 16-bit partial sums, adds them to its own input
// in float32, and encodes the float32 partial again for the next hop. The
// owner of each fully reduced block rounds it once more to 16 bits and
// adopts the decoded value itself, and the all-gather forwards those bits
// unchanged, so all ranks end bitwise identical.
//
// Error: each value is rounded p times on its way (p-1 reduce-scatter
// hops, the last one the owner's rounding), so for Sum
// |result - exact| <= p·u·Σ_ranks |x_rank| (plus float32 rounding, ~2^-24
// per addition), with u = c.UnitRoundoff(); fp16 adds at most 2^-39 times
// the largest magnitude of each chunk per rounding (scaled subnormals).
// Avg divides the float32 sum before its last rounding.
//
// dt must be Float32 and op Sum, Avg or PreMulSum (see Compressible); c
// NoCompression runs AllReduce. Algorithm: Auto or Ring only.
func AllReduceCompressed(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, dt reduce.DType, op reduce.Op, c Compression, o Options) error {
	if c == NoCompression || c == "" {
		return AllReduce(ctx, ep, tag, send, recv, dt, op, o)
	}
	if err := checkAllReduceCompressed(ep, send, recv, dt, op, c, o); err != nil {
		return wrapOp("allreduce "+string(c), rankOf(ep), err)
	}
	return wrapOp("allreduce "+string(c), ep.Rank(), allReduceCompressed(ctx, ep, tag, send, recv, op, newWireCodec(c), o))
}

func checkAllReduceCompressed(ep transport.Endpoint, send, recv []byte, dt reduce.DType, op reduce.Op, c Compression, o Options) error {
	if _, err := ParseCompression(string(c)); err != nil {
		return args.Invalidf("%v", err)
	}
	if !Compressible(dt, op) {
		return args.Invalidf("compressed all_reduce needs float32 data and op sum, avg or premul_sum, got %s %s", dt, op)
	}
	if err := checkEndpoint(ep); err != nil {
		return err
	}
	if err := checkOptions(o, Ring); err != nil {
		return err
	}
	return args.CheckAllReduceBuffers(send, recv, dt)
}

func allReduceCompressed(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send, recv []byte, op reduce.Op, codec wireCodec, o Options) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	src := prepareInput(send, recv, reduce.Float32, op, o)
	p := ep.Size()
	if p == 1 {
		args.CopyUnlessSame(recv, src)
		finishAvg(recv, reduce.Float32, op, p)
		return nil
	}
	chunkElems := o.chunkBytes(f32Size) / f32Size
	return compressedRing(ctx, ep, tag, src, recv, codec, op == reduce.Avg, chunkElems)
}

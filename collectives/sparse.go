package collectives

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

// SparseOptions tune SparseAllReduce.
type SparseOptions struct {
	Options
	// DenseFactor sets the fill-in rule: the exchange goes dense when the
	// gathered (index, value) lists would exceed DenseFactor times the
	// dense buffer's bytes (0: DefaultDenseFactor).
	DenseFactor float64
	// Dense, when set, runs the dense path's Sum all_reduce in place on
	// buf (pgbackend passes its shared-memory arena here); nil: AllReduce
	// over the endpoint.
	Dense func(ctx context.Context, buf []byte) error
}

// DefaultDenseFactor: dense as soon as the gathered lists outweigh the
// dense buffer. By bytes alone sparse would win up to a factor of 2 (a ring
// all_gather moves (p-1)/p of the lists per rank, a ring all_reduce
// 2(p-1)/p of the buffer), but scattering pairs into random positions
// costs more per byte than a streaming reduction, and the all_reduce
// pipelines better: 1 keeps that margin.
const DefaultDenseFactor = 1.0

// SparseResult says how a SparseAllReduce ran: the same on every rank.
type SparseResult struct {
	Dense    bool // the fill-in rule chose the dense all_reduce
	TotalNNZ int  // pairs contributed by all ranks together
}

// SparseValueTypes are the value types SparseAllReduce accepts.
var SparseValueTypes = []reduce.DType{reduce.Float32, reduce.Float64, reduce.Int32, reduce.Int64}

// SparseAllReduce sums sparse contributions into a dense result on every
// rank. Each rank gives (indices[j], values[j]) pairs, len(values) ==
// len(indices)·dt.Size(), indices in [0, n) where n = len(out)/dt.Size()
// is the same on every rank (checked); repeated indices add up. out is
// overwritten with the dense sum of every rank's pairs.
//
// Algorithm: the ranks first exchange their pair counts (and n); then
//   - sparse: a ring all_gather of the packed lists (int32 indices when
//     n <= 2^31, else int64, and the values), after which every rank adds
//     the pairs into a zeroed out in rank order, then list order;
//   - dense, when TotalNNZ·(index + value bytes) > DenseFactor·n·dt.Size():
//     every rank adds its own pairs into a zeroed out, then a Sum
//     all_reduce of out.
//
// Every rank chooses alike from the exchanged counts and ends with bitwise
// identical results. For integer types, and floats whose sums are exact,
// both paths give the same bits; otherwise the two paths add in different
// orders. Value types: SparseValueTypes.
func SparseAllReduce(ctx context.Context, ep transport.Endpoint, tag transport.Tag, indices []int64, values []byte, dt reduce.DType, out []byte, o SparseOptions) (SparseResult, error) {
	if err := checkEndpoint(ep); err != nil {
		return SparseResult{}, wrapOp("sparse allreduce", -1, err)
	}
	if err := CheckSparse(indices, values, dt, out); err != nil {
		return SparseResult{}, wrapOp("sparse allreduce", ep.Rank(), err)
	}
	res, err := sparseAllReduce(ctx, ep, tag, indices, values, dt, out, o)
	return res, wrapOp("sparse allreduce", ep.Rank(), err)
}

// CheckSparse validates the arguments of SparseAllReduce on one rank
// (indices within the dense buffer, sizes, value type).
func CheckSparse(indices []int64, values []byte, dt reduce.DType, out []byte) error {
	if !isSparseValueType(dt) {
		return args.Invalidf("sparse all_reduce of %s: want one of %v", dt, SparseValueTypes)
	}
	if err := args.CheckElems("out", out, dt); err != nil {
		return err
	}
	if err := args.CheckLen("values", values, len(indices)*dt.Size()); err != nil {
		return err
	}
	n := int64(len(out) / dt.Size())
	for j, i := range indices {
		if i < 0 || i >= n {
			return args.Invalidf("indices[%d] = %d outside the dense buffer of %d elements", j, i, n)
		}
	}
	return nil
}

func isSparseValueType(dt reduce.DType) bool {
	for _, v := range SparseValueTypes {
		if v == dt {
			return true
		}
	}
	return false
}

// sparseHeader is what each rank announces first: its pair count and its
// dense length, 8 bytes each.
const sparseHeader = 16

func sparseAllReduce(ctx context.Context, ep transport.Endpoint, tag transport.Tag, indices []int64, values []byte, dt reduce.DType, out []byte, o SparseOptions) (SparseResult, error) {
	if err := ctx.Err(); err != nil {
		return SparseResult{}, err
	}
	p, r := ep.Size(), ep.Rank()
	es := dt.Size()
	n := len(out) / es
	nnz, err := exchangeCounts(ctx, ep, tag, len(indices), n, o.Options)
	if err != nil {
		return SparseResult{}, err
	}
	res := SparseResult{TotalNNZ: sum(nnz)}
	lay := newPairLayout(n, es)
	res.Dense = chooseDense(res.TotalNNZ, lay.pairBytes(), n, es, o.DenseFactor)

	clear(out)
	if res.Dense {
		own := make([]byte, lay.size(nnz[r]))
		lay.pack(own, indices, values)
		if err := lay.scatterAdd(dt, out, own, nnz[r]); err != nil {
			return res, err
		}
		if p == 1 {
			return res, nil
		}
		if o.Dense != nil {
			return res, o.Dense(ctx, out)
		}
		return res, allReduce(ctx, ep, tag, out, out, dt, reduce.Sum, o.Options)
	}

	sizes := make([]int, p)
	for i, c := range nnz {
		sizes[i] = lay.size(c)
	}
	gathered := alignedBytes(sum(sizes))
	bl := countBlocks(sizes, 1)
	lay.pack(bl.of(gathered, r), indices, values)
	if p > 1 && res.TotalNNZ > 0 {
		if err := ringAllGather(ctx, ep, tag, bl.of(gathered, r), gathered, bl, o.chunkBytes(1)); err != nil {
			return res, err
		}
	}
	for i := range p {
		if err := lay.scatterAdd(dt, out, bl.of(gathered, i), nnz[i]); err != nil {
			return res, fmt.Errorf("pairs of rank %d: %w", i, err)
		}
	}
	return res, nil
}

// chooseDense is the fill-in rule (see SparseOptions.DenseFactor).
func chooseDense(totalNNZ, pairBytes, n, es int, factor float64) bool {
	if factor <= 0 {
		factor = DefaultDenseFactor
	}
	return float64(totalNNZ)*float64(pairBytes) > factor*float64(n)*float64(es)
}

// exchangeCounts all-gathers every rank's pair count, and checks that all
// ranks name the same dense length.
func exchangeCounts(ctx context.Context, ep transport.Endpoint, tag transport.Tag, nnz, n int, o Options) ([]int, error) {
	p, r := ep.Size(), ep.Rank()
	all := make([]byte, p*sparseHeader)
	binary.LittleEndian.PutUint64(all[r*sparseHeader:], uint64(nnz))
	binary.LittleEndian.PutUint64(all[r*sparseHeader+8:], uint64(n))
	if p > 1 {
		bl := evenBlocks(len(all), 1, p)
		if err := ringAllGather(ctx, ep, tag, bl.of(all, r), all, bl, o.chunkBytes(1)); err != nil {
			return nil, fmt.Errorf("pair counts: %w", err)
		}
	}
	counts := make([]int, p)
	for i := range p {
		c := binary.LittleEndian.Uint64(all[i*sparseHeader:])
		m := binary.LittleEndian.Uint64(all[i*sparseHeader+8:])
		if m != uint64(n) {
			return nil, args.Invalidf("rank %d has a dense buffer of %d elements, rank %d of %d", i, m, r, n)
		}
		if c > math.MaxInt32*8 { // far beyond any buffer this process could gather
			return nil, fmt.Errorf("rank %d announced %d pairs", i, c)
		}
		counts[i] = int(c)
	}
	return counts, nil
}

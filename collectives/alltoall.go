package collectives

import (
	"context"
	"fmt"

	"github.com/hccl-go/hccl-go/collectives/internal/args"
	"github.com/hccl-go/hccl-go/transport"
)

// AllToAllV sends send[sendDispls[i]:][:sendCounts[i]] to rank i, which
// receives it in recv[recvDispls[r]:][:recvCounts[r]], for every pair of
// ranks. All counts and displacements are in BYTES; sendCounts[i] on rank r
// must equal recvCounts[r] on rank i (a mismatch is an error, from the
// transport's exact-length receive). send and recv may be the same memory
// (in place; send is then copied first). Algorithm: Pairwise.
//
// Pairwise exchange: rank r copies its own block locally, then at step
// k = 1..p-1 sends its block for r+k and receives the block of r-k. Each
// rank sends and receives every block exactly once (zero-length blocks as
// empty messages, so mismatched counts are caught); one step in flight
// keeps the memory buffered by the transport bounded by one block.
func AllToAllV(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send []byte, sendCounts, sendDispls []int, recv []byte, recvCounts, recvDispls []int, o Options) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("alltoallv", -1, err)
	}
	return wrapOp("alltoallv", ep.Rank(), allToAllV(ctx, ep, tag, send, sendCounts, sendDispls, recv, recvCounts, recvDispls, o))
}

func allToAllV(ctx context.Context, ep transport.Endpoint, tag transport.Tag, send []byte, sendCounts, sendDispls []int, recv []byte, recvCounts, recvDispls []int, o Options) error {
	p, r := ep.Size(), ep.Rank()
	if err := checkOptions(o, Pairwise); err != nil {
		return err
	}
	if err := checkLayout("send", send, sendCounts, sendDispls, p); err != nil {
		return err
	}
	if err := checkLayout("recv", recv, recvCounts, recvDispls, p); err != nil {
		return err
	}
	if sendCounts[r] != recvCounts[r] {
		return args.Invalidf("sendCounts[%d] = %d != recvCounts[%d] = %d (the block a rank sends itself)", r, sendCounts[r], r, recvCounts[r])
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if args.Overlap(send, recv) {
		send = append([]byte(nil), send...) // keep the outgoing blocks intact
	}
	block := func(buf []byte, counts, displs []int, i int) []byte {
		return buf[displs[i] : displs[i]+counts[i]]
	}
	copy(block(recv, recvCounts, recvDispls, r), block(send, sendCounts, sendDispls, r))
	for k := 1; k < p; k++ {
		to, from := mod(r+k, p), mod(r-k, p)
		out := block(send, sendCounts, sendDispls, to)
		in := block(recv, recvCounts, recvDispls, from)
		if err := exchange(ctx, ep, tag, to, out, from, in, false); err != nil {
			return fmt.Errorf("pairwise step %d: %w", k, err)
		}
	}
	return nil
}

// checkLayout requires one block per rank, each inside buf.
func checkLayout(name string, buf []byte, counts, displs []int, p int) error {
	if err := args.CheckCounts(name+"Counts", counts, p); err != nil {
		return err
	}
	if err := args.CheckCounts(name+"Displs", displs, p); err != nil {
		return err
	}
	for i := range p {
		if displs[i]+counts[i] > len(buf) {
			return args.Invalidf("%s block %d [%d, %d) exceeds len(%s) = %d", name, i, displs[i], displs[i]+counts[i], name, len(buf))
		}
	}
	return nil
}

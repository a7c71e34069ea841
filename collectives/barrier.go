package collectives

import (
	"context"
	"fmt"

	"github.com/hccl-go/hccl-go/transport"
)

// Barrier returns once every rank has entered it.
//
// Dissemination: at round k = 0..ceil(log2 p)-1 rank r sends a 1-byte
// message to r+2^k and receives one from r-2^k. After round k a rank has
// heard, directly or not, from the 2^(k+1) ranks before it; after the last
// round from all. Each rank sends ceil(log2 p) bytes.
func Barrier(ctx context.Context, ep transport.Endpoint, tag transport.Tag) error {
	if err := checkEndpoint(ep); err != nil {
		return wrapOp("barrier", -1, err)
	}
	return wrapOp("barrier", ep.Rank(), barrier(ctx, ep, tag))
}

func barrier(ctx context.Context, ep transport.Endpoint, tag transport.Tag) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, r := ep.Size(), ep.Rank()
	var out, in [1]byte
	for k, dist := 0, 1; dist < p; k, dist = k+1, dist*2 {
		if err := exchange(ctx, ep, tag, mod(r+dist, p), out[:], mod(r-dist, p), in[:], false); err != nil {
			return fmt.Errorf("dissemination round %d: %w", k, err)
		}
	}
	return nil
}

package collectives_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/inproc"
)

// TestInvalidArguments: bad arguments fail at once, on the calling rank
// alone, with ErrInvalidArgument and a message naming the problem.
func TestInvalidArguments(t *testing.T) {
	f32, sum := reduce.Float32, reduce.Sum
	none := collectives.Options{}
	buf := make([]byte, 64)
	tests := []struct {
		name, want string
		call       func(ctx context.Context, ep transport.Endpoint) error
	}{
		{"allreduce/recv length", "len(recv) = 8, want 16", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllReduce(ctx, ep, testTag, buf[:16], buf[32:40], f32, sum, none)
		}},
		{"allreduce/partial elements", "not a multiple of the float32 element size 4", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllReduce(ctx, ep, testTag, buf[:6], buf[32:38], f32, sum, none)
		}},
		{"allreduce/partial overlap", "partially overlap", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllReduce(ctx, ep, testTag, buf[:16], buf[8:24], f32, sum, none)
		}},
		{"allreduce/wrong algorithm", `algorithm "tree" does not apply`, func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllReduce(ctx, ep, testTag, buf[:16], buf[32:48], f32, sum, collectives.Options{Algo: collectives.Tree})
		}},
		{"allreduce/negative chunk", "negative chunk size", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllReduce(ctx, ep, testTag, buf[:16], buf[32:48], f32, sum, collectives.Options{ChunkBytes: -1})
		}},
		{"allreduce/bad dtype", "unsupported dtype", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllReduce(ctx, ep, testTag, buf[:16], buf[32:48], reduce.DType(99), sum, none)
		}},
		{"broadcast/root", "root 2 outside [0, 2)", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.Broadcast(ctx, ep, testTag, buf[:8], buf[8:16], 2, none)
		}},
		{"broadcast/send length on root", "len(send) = 4, want 8", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.Broadcast(ctx, ep, testTag, buf[:4], buf[8:16], 0, none)
		}},
		{"reduce/root", "root -1 outside", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.Reduce(ctx, ep, testTag, buf[:8], buf[8:16], f32, sum, -1, none)
		}},
		{"reduce/recv length on root", "len(recv) = 0, want 8", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.Reduce(ctx, ep, testTag, buf[:8], nil, f32, sum, 0, none)
		}},
		{"allgather/recv length", "len(recv) = 12, want 16", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllGather(ctx, ep, testTag, buf[:8], buf[16:28], none)
		}},
		{"allgather/overlap not in place", "overlap other than in place", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllGather(ctx, ep, testTag, buf[4:12], buf[:16], none) // rank 0's block is buf[0:8]
		}},
		{"allgatherv/counts length", "len(counts) = 1, want the world size 2", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllGatherV(ctx, ep, testTag, buf[:8], buf[16:24], []int{8}, none)
		}},
		{"allgatherv/negative count", "counts[1] = -1 is negative", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllGatherV(ctx, ep, testTag, buf[:8], buf[16:24], []int{8, -1}, none)
		}},
		{"allgatherv/send length", "len(send) = 4, want 8", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllGatherV(ctx, ep, testTag, buf[:4], buf[16:32], []int{8, 8}, none)
		}},
		{"reducescatter/send length", "len(send) = 12, want 16", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.ReduceScatter(ctx, ep, testTag, buf[:12], buf[32:40], f32, sum, none)
		}},
		{"reducescatter/recv elements", "len(recv) = 6 bytes is not a multiple", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.ReduceScatter(ctx, ep, testTag, buf[:12], buf[32:38], f32, sum, none)
		}},
		{"reducescatterv/send length", "len(send) = 8, want 12", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.ReduceScatterV(ctx, ep, testTag, buf[:8], buf[32:36], []int{1, 2}, f32, sum, none)
		}},
		{"alltoallv/block outside", "send block 1 [8, 16) exceeds len(send) = 12", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllToAllV(ctx, ep, testTag, buf[:12], []int{8, 8}, []int{0, 8}, buf[16:32], []int{8, 8}, []int{0, 8}, none)
		}},
		{"alltoallv/self count", "sendCounts[0] = 4 != recvCounts[0] = 8", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllToAllV(ctx, ep, testTag, buf[:16], []int{4, 8}, []int{0, 8}, buf[16:32], []int{8, 8}, []int{0, 8}, none)
		}},
		{"alltoallv/displs length", "len(recvDispls) = 1, want the world size 2", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.AllToAllV(ctx, ep, testTag, buf[:16], []int{8, 8}, []int{0, 8}, buf[16:32], []int{8, 8}, []int{0}, none)
		}},
		{"gather/recv length on root", "len(recv) = 8, want 16", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.Gather(ctx, ep, testTag, buf[:8], buf[16:24], 0, none)
		}},
		{"scatter/send length on root", "len(send) = 8, want 16", func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.Scatter(ctx, ep, testTag, buf[:8], buf[16:24], 0, none)
		}},
		{"scatter/wrong algorithm", `algorithm "ring" does not apply`, func(ctx context.Context, ep transport.Endpoint) error {
			return collectives.Scatter(ctx, ep, testTag, buf[:16], buf[16:24], 0, collectives.Options{Algo: collectives.Ring})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eps := inproc.NewGroup(2)
			defer func() { _ = eps[0].Close(); _ = eps[1].Close() }()
			err := tt.call(context.Background(), eps[0]) // rank 0 alone: no peer ever answers
			require.ErrorIs(t, err, collectives.ErrInvalidArgument)
			require.Contains(t, err.Error(), tt.want)
			require.Contains(t, err.Error(), "rank 0:")
		})
	}
	t.Run("nil endpoint", func(t *testing.T) {
		err := collectives.Barrier(context.Background(), nil, testTag)
		require.ErrorIs(t, err, collectives.ErrInvalidArgument)
	})
}

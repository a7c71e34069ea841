package pgbackend

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
)

// TestSymmetricAllReduce: an all_reduce on buffers of a registered
// symmetric window, from SymmetricMinBytes, runs in place (route
// "symmetric"), smaller ones and unregistered windows in the arena; the
// results are the sums either way. Broadcast and all_gather into a
// symmetric recv, and reduce_scatter from a symmetric send, run in place
// too.
func TestSymmetricAllReduce(t *testing.T) {
	cs := connectAll(t, []string{"h", "h"}, testConfig())
	const bytes = 2 * SymmetricBlockMinBytes
	ws, _ := allocWindows(t, cs, []string{"h", "h"}, bytes)
	run := func(n int, want string) {
		eachRank(cs, func(c *Communicator) {
			region, err := ws[c.Rank()].Region(c.Rank())
			require.NoError(t, err)
			buf := region[4 : 4+n]
			for i := 0; i < n; i += 4 {
				binary.NativeEndian.PutUint32(buf[i:], math.Float32bits(float32(c.Rank()+1)))
			}
			w, err := c.AllReduce(buf, buf, reduce.Float32, reduce.Sum, 0, StreamDefault)
			wait(t, w, err)
			for i := 0; i < n; i += 4 {
				require.Equal(t, float32(3), math.Float32frombits(binary.NativeEndian.Uint32(buf[i:])), "rank %d element %d", c.Rank(), i/4)
			}
			assert.Equal(t, want, lastRoute(t, c), "%d bytes on rank %d", n, c.Rank())
		})
	}
	run(SymmetricMinBytes, "arena") // not registered yet
	for r, c := range cs {
		c.RegisterWindow(ws[r])
	}
	run(SymmetricMinBytes, "symmetric")
	run(SymmetricMinBytes-4, "arena")

	// Broadcast from an ordinary send on the root, and all_gather in place
	// and from an ordinary send, into symmetric recvs.
	const n = SymmetricBlockMinBytes / 2
	eachRank(cs, func(c *Communicator) {
		region, err := ws[c.Rank()].Region(c.Rank())
		require.NoError(t, err)
		recv := region[8 : 8+2*n]
		src := make([]byte, len(recv))
		for i := range src {
			src[i] = byte(i * 7)
		}
		w, err := c.Broadcast(src, recv, 1, StreamDefault)
		wait(t, w, err)
		require.Equal(t, src, recv, "rank %d", c.Rank())
		assert.Equal(t, "symmetric", lastRoute(t, c))

		for _, inPlace := range []bool{true, false} {
			send := make([]byte, n)
			for i := range send {
				send[i] = byte(c.Rank() + i)
			}
			if inPlace {
				own := recv[c.Rank()*n : (c.Rank()+1)*n]
				copy(own, send)
				send = own
			}
			w, err := c.AllGather(send, recv, StreamDefault)
			wait(t, w, err)
			for q := range 2 {
				for i := 0; i < n; i += 997 {
					require.Equal(t, byte(q+i), recv[q*n+i], "rank %d block %d byte %d", c.Rank(), q, i)
				}
			}
			assert.Equal(t, "symmetric", lastRoute(t, c))
		}

		// Reduce_scatter from a symmetric send into an ordinary recv.
		send := region[8 : 8+2*n]
		for i := 0; i < len(send); i += 4 {
			binary.NativeEndian.PutUint32(send[i:], math.Float32bits(float32(c.Rank()+1)))
		}
		out := make([]byte, n)
		w, err = c.ReduceScatter(send, out, reduce.Float32, reduce.Sum, 0, StreamDefault)
		wait(t, w, err)
		for i := 0; i < n; i += 4 {
			require.Equal(t, float32(3), math.Float32frombits(binary.NativeEndian.Uint32(out[i:])), "rank %d element %d", c.Rank(), i/4)
		}
		assert.Equal(t, "symmetric", lastRoute(t, c))
	})
	for r, c := range cs {
		c.UnregisterWindow(ws[r])
	}
	run(SymmetricMinBytes, "arena")
}

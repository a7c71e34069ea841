package collectives

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
)

func TestPairLayout(t *testing.T) {
	assert.Equal(t, pairLayout{4, 4}, newPairLayout(1<<31, 4))
	assert.Equal(t, pairLayout{8, 8}, newPairLayout(1<<31+1, 8))
	assert.Equal(t, 16, pairLayout{4, 4}.size(1)) // each part padded to 8
	assert.Equal(t, 40, pairLayout{8, 4}.size(3))

	for _, l := range []pairLayout{{4, 4}, {8, 4}} {
		block := alignedBytes(l.size(3))
		l.pack(block, []int64{2, 0, 2}, f32Bytes(1, 10, 100))
		out := f32Bytes(0, 0, 0)
		require.NoError(t, l.scatterAdd(reduce.Float32, out, block, 3))
		assert.Equal(t, []float32{10, 0, 101}, f32Values(out), "index bytes %d", l.indexBytes)
	}
}

// TestScatterAddRejectsBadPeerData: a peer's out-of-range index or a block
// of the wrong size is an error, not a write out of bounds.
func TestScatterAddRejectsBadPeerData(t *testing.T) {
	l := pairLayout{4, 4}
	block := alignedBytes(l.size(1))
	binary.NativeEndian.PutUint32(block, 0xffffffff) // index -1
	require.Error(t, l.scatterAdd(reduce.Float32, make([]byte, 8), block, 1))
	binary.NativeEndian.PutUint32(block, 2)
	require.Error(t, l.scatterAdd(reduce.Float32, make([]byte, 8), block, 1))
	require.Error(t, l.scatterAdd(reduce.Float32, make([]byte, 8), block[:8], 1))
}

func TestChooseDense(t *testing.T) {
	assert.False(t, chooseDense(50, 8, 100, 4, 0)) // 400 bytes of pairs = 400 dense
	assert.True(t, chooseDense(51, 8, 100, 4, 0))
	assert.False(t, chooseDense(51, 8, 100, 4, 2))
	assert.False(t, chooseDense(0, 8, 0, 4, 0))
}

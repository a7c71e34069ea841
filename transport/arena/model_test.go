package arena

import (
	"testing"

	"github.com/hccl-go/hccl-go/topo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// topo's scale model counts an arena segment of the default Config.
func TestScaleModelArenaSegment(t *testing.T) {
	cfg, err := Config{}.withDefaults()
	require.NoError(t, err)
	g := geometry{inlineBytes: cfg.InlineBytes, dataBytes: cfg.DataBytes}
	assert.Equal(t, int64(g.segmentSize()), topo.ArenaSegmentBytes())
}

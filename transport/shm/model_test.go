//go:build linux

package shm

import (
	"fmt"
	"testing"

	"github.com/hccl-go/hccl-go/topo"
	"github.com/stretchr/testify/assert"
)

// topo's scale model sizes segments as this package does by default.
func TestScaleModelSegment(t *testing.T) {
	for _, k := range []int{2, 3, 8, 9, 16, 64, 128, 1024} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			slots := defaultSlotsFor(k, 0)
			assert.Equal(t, slots, topo.ShmSlots(k))
			g := geometry{nLocal: k, slots: slots, slotSize: defaultSlotSize}
			assert.Equal(t, int64(g.segmentSize()), topo.ShmSegmentBytes(k))
		})
	}
}

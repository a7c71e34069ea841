//go:build !linux

package shm

import (
	"context"
	"errors"

	"github.com/hccl-go/hccl-go/transport"
)

// Endpoint is not available on this system.
type Endpoint struct{ transport.Endpoint }

// Connect fails: shared-memory links need Linux (futexes, /dev/shm).
func Connect(ctx context.Context, rank int, peers []int, size int, jobID string, cfg Config) (*Endpoint, error) {
	return nil, errors.New("shm: only supported on linux")
}

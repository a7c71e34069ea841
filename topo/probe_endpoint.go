package topo

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/hccl-go/hccl-go/transport"
)

// endpointLinks implements ProbeLinks over a transport.Endpoint.
type endpointLinks struct {
	ep  transport.Endpoint
	tag transport.Tag
}

// NewEndpointLinks probes over ep, with messages under tag (pings) and
// tag+1 (barriers), which nothing else may use during the probe.
func NewEndpointLinks(ep transport.Endpoint, tag transport.Tag) ProbeLinks {
	return &endpointLinks{ep: ep, tag: tag}
}

// Ping: the lower rank sends nbytes, the higher answers with one byte, and
// the lower rank sends the round-trip time it measured (8 bytes), which
// both return.
func (l *endpointLinks) Ping(ctx context.Context, peer, nbytes int) (time.Duration, error) {
	payload := make([]byte, nbytes)
	var ack [1]byte
	var rtt [8]byte
	if l.ep.Rank() < peer {
		start := time.Now()
		if err := l.ep.Send(ctx, peer, l.tag, payload); err != nil {
			return 0, fmt.Errorf("ping send: %w", err)
		}
		if err := l.ep.Recv(ctx, peer, l.tag, ack[:]); err != nil {
			return 0, fmt.Errorf("ping acknowledgement: %w", err)
		}
		d := time.Since(start)
		binary.LittleEndian.PutUint64(rtt[:], uint64(d))
		if err := l.ep.Send(ctx, peer, l.tag, rtt[:]); err != nil {
			return 0, fmt.Errorf("ping result: %w", err)
		}
		return d, nil
	}
	if err := l.ep.Recv(ctx, peer, l.tag, payload); err != nil {
		return 0, fmt.Errorf("ping receive: %w", err)
	}
	if err := l.ep.Send(ctx, peer, l.tag, ack[:]); err != nil {
		return 0, fmt.Errorf("ping acknowledgement: %w", err)
	}
	if err := l.ep.Recv(ctx, peer, l.tag, rtt[:]); err != nil {
		return 0, fmt.Errorf("ping result: %w", err)
	}
	return time.Duration(binary.LittleEndian.Uint64(rtt[:])), nil
}

// Barrier is a dissemination barrier: in round k every rank signals rank
// +2^k and waits for rank -2^k; ceil(log2 n) rounds.
func (l *endpointLinks) Barrier(ctx context.Context) error {
	n, r := l.ep.Size(), l.ep.Rank()
	var token [1]byte
	for d := 1; d < n; d *= 2 {
		if err := l.ep.Send(ctx, (r+d)%n, l.tag+1, token[:]); err != nil {
			return fmt.Errorf("barrier: %w", err)
		}
		if err := l.ep.Recv(ctx, (r-d+n)%n, l.tag+1, token[:]); err != nil {
			return fmt.Errorf("barrier: %w", err)
		}
	}
	return nil
}

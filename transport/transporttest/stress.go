package transporttest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/transport"
)

// testTaggedStress mimics a communicator running collectives back to back:
// two ranks go through many operations, each under the next tag, each
// exchanging one to three messages of mixed sizes (0 bytes to 1 MiB) in both
// directions. Per operation and rank the receives are posted before the
// peer's sends, after them, or concurrently with the own sends. Every
// payload names its (sender, tag, index), so a message delivered to the
// wrong receive, twice, or not at all is caught. Between operations each
// rank checks that a receive under the next tag, which the peer has not sent
// yet, does not complete (a recycled or stale message must not satisfy it),
// as a barrier after the last operation would.
func testTaggedStress(t *testing.T, newGroup NewGroupFunc) {
	ctx := testCtx(t)
	eps := newGroup(t, 2)
	const ops = 200
	var wg sync.WaitGroup
	errs := make([]error, 2)
	// gate makes rank 1 wait, before each operation's sends, until rank 0
	// probed that operation's tag: the probe then runs while nothing is
	// in flight under that tag.
	gate := make(chan struct{}, ops)
	for r := range 2 {
		wg.Go(func() { errs[r] = stressRank(ctx, eps[r], 1-r, ops, gate) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}

// stressSizes are the message lengths the stress test draws from: empty,
// tiny, around pool size classes and the 64 KiB exchange threshold, and
// large (a few frames of 1 MiB with four streams).
var stressSizes = []int{0, 1, 4, 7, 12, 63, 64, 65, 1000, 4096, 65<<10 + 4, 1<<20 + 12}

// stressPlan is the messages a rank sends under one tag: deterministic from
// (sender, op), so that the receiver knows what to expect.
func stressPlan(sender, op int) []int {
	h := uint64(op)*0x9E3779B97F4A7C15 + uint64(sender)*0xBF58476D1CE4E5B9
	h ^= h >> 31
	sizes := make([]int, 1+h%3)
	for i := range sizes {
		h = h*6364136223846793005 + 1442695040888963407
		idx := int(h>>33) % len(stressSizes)
		if idx == len(stressSizes)-1 && (h>>40)%3 != 0 {
			idx = int(h>>45) % 8 // keep large messages rarer: the race detector is slow
		}
		sizes[i] = stressSizes[idx]
	}
	return sizes
}

// stressStride is the spacing of the stamps stressPayload writes.
const stressStride = 64

// stressPayload fills b with stamps naming (sender, tag, index, offset),
// one every stressStride bytes, and bytes derived from them in between, so
// that a message, or part of one, delivered to the wrong receive or at the
// wrong offset is noticed.
func stressPayload(b []byte, sender int, tag transport.Tag, index int) {
	id := uint64(sender)<<56 | uint64(tag)<<8 | uint64(index)
	var block [stressStride]byte
	for i := range block {
		block[i] = byte(id>>(8*(i%8))) ^ byte(i)
	}
	for off := 0; off < len(b); off += stressStride {
		binary.LittleEndian.PutUint64(block[:], id)
		binary.LittleEndian.PutUint64(block[8:], uint64(off))
		copy(b[off:], block[:])
	}
}

func stressRank(ctx context.Context, ep transport.Endpoint, peer, ops int, gate chan struct{}) error {
	me := ep.Rank()
	for op := range ops {
		tag := transport.Tag(op + 1)
		if me == 0 {
			if err := probeNothing(ctx, ep, peer, tag); err != nil {
				return fmt.Errorf("op %d: %w", op, err)
			}
			gate <- struct{}{}
		} else {
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := stressOp(ctx, ep, peer, op, tag); err != nil {
			return fmt.Errorf("rank %d op %d tag %d: %w", me, op, tag, err)
		}
	}
	return nil
}

// probeNothing checks that nothing is delivered under tag from peer for a
// short while.
func probeNothing(ctx context.Context, ep transport.Endpoint, peer int, tag transport.Tag) error {
	short, cancel := context.WithTimeout(ctx, 2*time.Millisecond)
	defer cancel()
	err := ep.Recv(short, peer, tag, make([]byte, 1))
	if errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return fmt.Errorf("recv under tag %d before the peer sent anything: got %v, want a timeout", tag, err)
}

// stressOp runs one operation: send this rank's plan to peer, receive the
// peer's, in an order that depends on (rank, op).
func stressOp(ctx context.Context, ep transport.Endpoint, peer, op int, tag transport.Tag) error {
	me := ep.Rank()
	out := stressPlan(me, op)
	in := stressPlan(peer, op)
	send := func() error {
		for i, n := range out {
			buf := make([]byte, n)
			stressPayload(buf, me, tag, i)
			if err := ep.Send(ctx, peer, tag, buf); err != nil {
				return fmt.Errorf("send %d (%d bytes): %w", i, n, err)
			}
			clear(buf) // the sender may reuse its buffer at once
		}
		return nil
	}
	recv := func() error {
		want := make([]byte, 0)
		for i, n := range in {
			got := make([]byte, n)
			if err := ep.Recv(ctx, peer, tag, got); err != nil {
				return fmt.Errorf("recv %d (%d bytes): %w", i, n, err)
			}
			want = append(want[:0], make([]byte, n)...)
			stressPayload(want, peer, tag, i)
			if !bytes.Equal(want, got) {
				return fmt.Errorf("recv %d (%d bytes): wrong payload", i, n)
			}
		}
		return nil
	}
	switch (op + 3*me) % 4 {
	case 0: // send, then receive (what small exchanges do)
		if err := send(); err != nil {
			return err
		}
		return recv()
	case 1: // receive late: the peer's messages wait buffered, or land meanwhile
		sent := make(chan error, 1)
		go func() { sent <- send() }()
		time.Sleep(time.Duration(op%3) * time.Millisecond)
		return errors.Join(recv(), <-sent)
	case 2: // receive concurrently with the own sends
		sent := make(chan error, 1)
		go func() { sent <- send() }()
		return errors.Join(recv(), <-sent)
	default: // receive first, send from another goroutine a bit later
		sent := make(chan error, 1)
		go func() {
			time.Sleep(time.Duration(op%2) * time.Millisecond)
			sent <- send()
		}()
		return errors.Join(recv(), <-sent)
	}
}

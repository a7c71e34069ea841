package hybrid

import (
	"context"
	"fmt"
	"sync"

	"github.com/hccl-go/hccl-go/transport"
)

// selfBox delivers a rank's messages to itself: FIFO per tag, a send never
// waits (unclaimed messages are copied and kept), exact sizes.
type selfBox struct {
	mu     sync.Mutex
	closed bool
	queues map[transport.Tag]*selfQueue
}

// selfQueue holds, for one tag, messages nobody asked for yet or receives
// nobody answered yet (never both).
type selfQueue struct {
	arrived [][]byte
	posted  []*selfRecv
}

type selfRecv struct {
	buf  []byte
	done chan error // capacity 1, written once under mu
}

func newSelfBox() *selfBox { return &selfBox{queues: make(map[transport.Tag]*selfQueue)} }

func sizeErr(tag transport.Tag, got, want int) error {
	return fmt.Errorf("recv from self tag %#x: got %d bytes, want %d: %w",
		uint64(tag), got, want, transport.ErrSizeMismatch)
}

func (b *selfBox) send(tag transport.Tag, data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return transport.ErrClosed
	}
	q := b.queue(tag)
	if len(q.posted) > 0 {
		r := q.posted[0]
		q.posted = q.posted[1:]
		b.dropIfEmpty(tag, q)
		if len(r.buf) != len(data) {
			r.done <- sizeErr(tag, len(data), len(r.buf)) // the message is consumed
		} else {
			copy(r.buf, data)
			r.done <- nil
		}
		return nil
	}
	q.arrived = append(q.arrived, append([]byte(nil), data...))
	return nil
}

func (b *selfBox) recv(ctx context.Context, tag transport.Tag, buf []byte) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return transport.ErrClosed
	}
	q := b.queue(tag)
	if len(q.arrived) > 0 {
		m := q.arrived[0]
		q.arrived = q.arrived[1:]
		b.dropIfEmpty(tag, q)
		b.mu.Unlock()
		if len(m) != len(buf) {
			return sizeErr(tag, len(m), len(buf))
		}
		copy(buf, m)
		return nil
	}
	r := &selfRecv{buf: buf, done: make(chan error, 1)}
	q.posted = append(q.posted, r)
	b.mu.Unlock()

	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if q := b.queues[tag]; q != nil {
		for i, p := range q.posted {
			if p == r {
				q.posted = append(q.posted[:i], q.posted[i+1:]...)
				b.dropIfEmpty(tag, q)
				return fmt.Errorf("recv from self tag %#x: %w", uint64(tag), ctx.Err())
			}
		}
	}
	return <-r.done // answered while we gave up: the outcome stands
}

// tryRecv takes the oldest message under tag if there is one.
func (b *selfBox) tryRecv(tag transport.Tag, buf []byte) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false, transport.ErrClosed
	}
	q := b.queues[tag]
	if q == nil || len(q.arrived) == 0 {
		return false, nil
	}
	m := q.arrived[0]
	q.arrived = q.arrived[1:]
	b.dropIfEmpty(tag, q)
	if len(m) != len(buf) {
		return true, sizeErr(tag, len(m), len(buf))
	}
	copy(buf, m)
	return true, nil
}

func (b *selfBox) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for _, q := range b.queues {
		for _, r := range q.posted {
			r.done <- transport.ErrClosed
		}
	}
	clear(b.queues)
}

func (b *selfBox) queue(tag transport.Tag) *selfQueue {
	q := b.queues[tag]
	if q == nil {
		q = &selfQueue{}
		b.queues[tag] = q
	}
	return q
}

// dropIfEmpty forgets an empty queue: tags are sequence numbers.
func (b *selfBox) dropIfEmpty(tag transport.Tag, q *selfQueue) {
	if len(q.arrived) == 0 && len(q.posted) == 0 {
		delete(b.queues, tag)
	}
}

// queued reports the receives posted and the messages kept under tag.
func (b *selfBox) queued(tag transport.Tag) (posted, arrived int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q := b.queues[tag]; q != nil {
		return len(q.posted), len(q.arrived)
	}
	return 0, 0
}

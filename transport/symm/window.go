package symm

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hccl-go/hccl-go/transport"
)

// Exchange all-gathers one record per rank: recv holds size*len(send)
// bytes, rank i's record at i*len(send). A communicator's AllGather is one.
type Exchange func(ctx context.Context, send, recv []byte) error

// Spec describes one rank's part in an allocation.
type Spec struct {
	Rank, Size int
	Bytes      int    // the data region, the same on every rank
	HostID     string // ranks with equal host identities share memory
	// Dir holds the segment files (default /dev/shm).
	Dir string
	// Timeout bounds Alloc and is the default of WaitSignal and Barrier
	// (default 5 minutes, torch's collective timeout).
	Timeout time.Duration
	// Remote reaches the ranks of other hosts (nil: operations naming
	// them fail with ErrCrossHost).
	Remote Remote
}

const (
	defaultTimeout = 5 * time.Minute
	recordBytes    = 128
	hostBytes      = 64 // of a record: the host identity, for messages
	segmentPrefix  = "hccl-go-symm-"
)

// Window is one rank's view of an allocation: its own region and those of
// the local peers, mapped. Its methods are safe for concurrent use; Close
// waits for the operations in progress.
type Window struct {
	rank, size, bytes int
	timeout           time.Duration
	segs              []*segment // by rank; nil for remote ranks
	hosts             []string   // by rank: host identity, for messages
	pids              []int      // by rank, as the owner wrote it
	data              [][]byte   // by rank: the data region; nil for remote ranks
	consumed          []atomic.Uint64

	remote Remote // nil: no rank of another host is reachable

	life   sync.RWMutex // operations read, Close writes
	closed bool
}

// Alloc makes this rank's part of a symmetric allocation, collectively:
// every rank of the exchange calls it with the same Bytes. It returns once
// every local peer has mapped this rank's segment, which is then unlinked.
func Alloc(ctx context.Context, spec Spec, exchange Exchange) (*Window, error) {
	if spec.Size < 1 || spec.Rank < 0 || spec.Rank >= spec.Size || spec.Bytes < 0 {
		return nil, fmt.Errorf("symm: %w: rank %d of %d, %d bytes", ErrInvalid, spec.Rank, spec.Size, spec.Bytes)
	}
	if spec.Dir == "" {
		spec.Dir = "/dev/shm"
	}
	if spec.Timeout <= 0 {
		spec.Timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	records, err := exchangeRecords(ctx, spec, exchange)
	if err != nil {
		return nil, fmt.Errorf("symm alloc rank %d: %w", spec.Rank, err)
	}
	w := &Window{
		rank: spec.Rank, size: spec.Size, bytes: spec.Bytes, timeout: spec.Timeout,
		segs: make([]*segment, spec.Size), hosts: make([]string, spec.Size), pids: make([]int, spec.Size),
		data: make([][]byte, spec.Size), consumed: make([]atomic.Uint64, spec.Size), remote: spec.Remote,
	}
	nonce := records[0][8:24]
	mineHost := records[spec.Rank][24:56]
	var local []int
	for r, rec := range records {
		w.hosts[r] = string(trimZero(rec[recordBytes-hostBytes:]))
		w.pids[r] = int(binary.LittleEndian.Uint64(rec[56:64]))
		if string(rec[24:56]) == string(mineHost) {
			local = append(local, r)
		}
	}
	if err := w.connect(ctx, spec.Dir, nonce, local); err != nil {
		for r, s := range w.segs {
			if s != nil {
				_ = s.release() // the setup error says more
			} else if r != w.rank && containsRank(local, r) {
				removeOrphan(segmentPath(spec.Dir, nonce, r))
			}
		}
		return nil, fmt.Errorf("symm alloc rank %d, local ranks %v: %w", spec.Rank, local, err)
	}
	return w, nil
}

// exchangeRecords all-gathers every rank's size, host and pid (and rank 0's
// nonce, the allocation's name) and checks that the sizes agree.
func exchangeRecords(ctx context.Context, spec Spec, exchange Exchange) ([][]byte, error) {
	send := make([]byte, recordBytes)
	binary.LittleEndian.PutUint64(send[0:8], uint64(spec.Bytes))
	if _, err := rand.Read(send[8:24]); err != nil {
		return nil, fmt.Errorf("draw a name: %w", err)
	}
	host := sha256.Sum256([]byte(spec.HostID))
	copy(send[24:56], host[:])
	binary.LittleEndian.PutUint64(send[56:64], uint64(os.Getpid()))
	copy(send[recordBytes-hostBytes:], spec.HostID)
	recv := make([]byte, spec.Size*recordBytes)
	if err := exchange(ctx, send, recv); err != nil {
		return nil, fmt.Errorf("exchange sizes and hosts: %w", err)
	}
	records := make([][]byte, spec.Size)
	for r := range records {
		records[r] = recv[r*recordBytes : (r+1)*recordBytes]
	}
	for r, rec := range records {
		if n := binary.LittleEndian.Uint64(rec[0:8]); n != uint64(spec.Bytes) {
			return nil, fmt.Errorf("%w: rank %d asked for %d bytes, rank %d for %d (every rank must ask for the same size)",
				ErrInvalid, r, n, spec.Rank, spec.Bytes)
		}
	}
	return records, nil
}

func trimZero(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

func containsRank(ranks []int, r int) bool {
	for _, x := range ranks {
		if x == r {
			return true
		}
	}
	return false
}

// segmentPath names rank's segment of the allocation called nonce.
func segmentPath(dir string, nonce []byte, rank int) string {
	return filepath.Join(dir, fmt.Sprintf("%s%s-%d", segmentPrefix, hex.EncodeToString(nonce), rank))
}

// connect creates the own segment, maps the local peers' and unlinks the
// own once they all mapped it.
func (w *Window) connect(ctx context.Context, dir string, nonce []byte, local []int) error {
	size := segmentSize(w.size, w.bytes)
	own, err := createSegment(segmentPath(dir, nonce, w.rank), size)
	if err != nil {
		return err
	}
	w.segs[w.rank] = own
	m := own.mem
	word64(m, hVersion).Store(segVersion)
	word64(m, hBytes).Store(uint64(w.bytes))
	copy(m[hNonce:hNonce+16], nonce)
	word64(m, hRank).Store(uint64(w.rank))
	word64(m, hPid).Store(uint64(os.Getpid()))
	word64(m, hMagic).Store(segMagic) // last: the header is complete
	for _, r := range local {
		if r == w.rank {
			continue
		}
		path := segmentPath(dir, nonce, r)
		err := retry(ctx, func() error {
			s, err := openSegment(path, size)
			if err == nil {
				w.segs[r] = s
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("map the segment of rank %d (pid %d): %w", r, w.pids[r], err)
		}
		p := w.segs[r].mem
		if string(p[hNonce:hNonce+16]) != string(nonce) || word64(p, hRank).Load() != uint64(r) {
			return fmt.Errorf("segment %s belongs to another allocation", path)
		}
		word64(p, hAttach).Add(1)
	}
	attach := word64(m, hAttach)
	err = retry(ctx, func() error {
		if attach.Load() >= uint64(len(local)-1) {
			return nil
		}
		for r, s := range w.segs {
			if s == nil || r == w.rank {
				continue
			}
			if alive, err := s.alive(); err != nil || !alive {
				return errors.Join(err, w.peerGone("alloc", r))
			}
		}
		return errNotReady
	})
	if err != nil {
		return fmt.Errorf("wait for %d local peers to map this rank's segment (%d did): %w", len(local)-1, attach.Load(), err)
	}
	if err := own.unlink(); err != nil {
		return err
	}
	off := dataOffset(w.size)
	for r, s := range w.segs {
		if s != nil {
			w.data[r] = s.mem[off : off+w.bytes : off+w.bytes]
		}
	}
	return nil
}

// retry calls try until it returns anything but errNotReady, backing off
// from 20µs to 2ms, or until ctx ends.
func retry(ctx context.Context, try func() error) error {
	delay := 20 * time.Microsecond
	for {
		err := try()
		if !errors.Is(err, errNotReady) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (%w)", ctx.Err(), err)
		case <-t.C:
		}
		delay = min(2*delay, 2*time.Millisecond)
	}
}

// Rank is this rank; Size the number of ranks of the window; Bytes the
// size of every rank's region.
func (w *Window) Rank() int  { return w.rank }
func (w *Window) Size() int  { return w.size }
func (w *Window) Bytes() int { return w.bytes }

// Timeout is the default of WaitSignal and Barrier.
func (w *Window) Timeout() time.Duration { return w.timeout }

// Local reports whether rank shares this rank's host (and its memory).
func (w *Window) Local(rank int) bool { return rank >= 0 && rank < w.size && w.segs[rank] != nil }

// checkPeer validates a rank an operation names.
func (w *Window) checkPeer(op string, rank int) error {
	if rank < 0 || rank >= w.size {
		return fmt.Errorf("symm %s: %w: rank %d out of range for %d ranks", op, ErrInvalid, rank, w.size)
	}
	if w.segs[rank] == nil {
		return fmt.Errorf("symm %s: rank %d is on host %q, rank %d on %q: %w",
			op, rank, w.hosts[rank], w.rank, w.hosts[w.rank], ErrCrossHost)
	}
	return nil
}

// Region returns rank's data region, mapped in this process: loads and
// stores go straight to its memory. It stays valid until Close.
func (w *Window) Region(rank int) ([]byte, error) {
	if err := w.checkPeer("region", rank); err != nil {
		return nil, err
	}
	w.life.RLock()
	defer w.life.RUnlock()
	if w.closed {
		return nil, fmt.Errorf("symm region: %w", ErrClosed)
	}
	return w.data[rank], nil
}

// span checks that [off, off+n) lies in a region.
func (w *Window) span(op string, off, n int) error {
	if off < 0 || n < 0 || off > w.bytes || n > w.bytes-off {
		return fmt.Errorf("symm %s: %w: bytes [%d, %d) are outside the region of %d bytes", op, ErrInvalid, off, off+n, w.bytes)
	}
	return nil
}

// Put copies src into rank dst's region at byte offset off: in memory on
// this host, through the Remote to another.
func (w *Window) Put(src []byte, dst, off int) error {
	if w.remoteOK(dst) {
		if err := w.span("put", off, len(src)); err != nil {
			return err
		}
		return w.remoteCall("put", dst, func(ctx context.Context) error { return w.remote.Put(ctx, dst, off, src) })
	}
	return w.transfer("put", dst, off, len(src), func(region []byte) { copy(region[off:off+len(src)], src) })
}

// Get copies len(dst) bytes from rank src's region at byte offset off.
func (w *Window) Get(dst []byte, src, off int) error {
	if w.remoteOK(src) {
		if err := w.span("get", off, len(dst)); err != nil {
			return err
		}
		return w.remoteCall("get", src, func(ctx context.Context) error { return w.remote.Get(ctx, src, off, dst) })
	}
	return w.transfer("get", src, off, len(dst), func(region []byte) { copy(dst, region[off:off+len(dst)]) })
}

func (w *Window) transfer(op string, peer, off, n int, move func(region []byte)) error {
	if err := w.checkPeer(op, peer); err != nil {
		return err
	}
	if err := w.span(op, off, n); err != nil {
		return err
	}
	w.life.RLock()
	defer w.life.RUnlock()
	if w.closed {
		return fmt.Errorf("symm %s: %w", op, ErrClosed)
	}
	move(w.data[peer])
	return nil
}

// Close unmaps every region and releases this rank's lock: peers waiting
// on it see it gone. Further operations fail with ErrClosed. Idempotent.
func (w *Window) Close() error {
	w.life.Lock()
	defer w.life.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	var err error
	for _, s := range w.segs {
		if s != nil {
			err = errors.Join(err, s.release())
		}
	}
	if err != nil {
		return fmt.Errorf("symm close rank %d: %w", w.rank, err)
	}
	return nil
}

// peerGone is the error of a wait whose peer died or closed its window.
func (w *Window) peerGone(op string, rank int) error {
	return &transport.PeerError{Peer: rank, Op: "symm " + op, Err: fmt.Errorf(
		"rank %d (pid %d) died or closed its window while rank %d waited for it", rank, w.pids[rank], w.rank)}
}

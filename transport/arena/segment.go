package arena

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// segmentPrefix starts the name of every segment file of this package.
const segmentPrefix = "hccl-go-arena-"

// errNotReady means a peer's segment is absent, not initialised yet, or left
// by a dead process: try again later.
var errNotReady = errors.New("segment not ready")

// jobHash condenses a job ID (of any length and bytes) for file names and
// the header check.
func jobHash(jobID string) uint64 {
	sum := sha256.Sum256([]byte(jobID))
	return binary.LittleEndian.Uint64(sum[:8])
}

// segmentPath names the segment of a global rank.
func segmentPath(dir string, hash uint64, rank int) string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], hash)
	return filepath.Join(dir, fmt.Sprintf("%s%s-%d", segmentPrefix, hex.EncodeToString(b[:]), rank))
}

// segment is one mapped segment file, with the descriptor kept open: the
// owner's holds the liveness lock, a peer's lets us test it.
type segment struct {
	path   string
	fd     int
	mem    []byte
	linked bool // the file may still be in the directory (own segment only)
}

// header is the static part of a segment header.
type header struct {
	nLocal, index int
	geom          geometry
	hash          uint64
	pid           int
}

// createSegment creates, locks, maps and initialises this rank's segment,
// removing a stale file of the same name first. A file whose owner is alive
// (job IDs that are not unique) is an error, never removed.
func createSegment(path string, h header) (*segment, error) {
	if err := removeStale(path); err != nil {
		return nil, err
	}
	size := h.geom.segmentSize()
	fd, err := createFile(path, size)
	if err != nil {
		return nil, err
	}
	s := &segment{path: path, fd: fd, linked: true}
	if err := lockFile(fd); err != nil {
		s.release()
		return nil, err
	}
	if s.mem, err = mapFile(fd, size); err != nil {
		s.release()
		return nil, err
	}
	m := s.mem
	word64(m, hVersion).Store(segVersion)
	word64(m, hNLocal).Store(uint64(h.nLocal))
	word64(m, hIndex).Store(uint64(h.index))
	word64(m, hInlineBytes).Store(uint64(h.geom.inlineBytes))
	word64(m, hDataBytes).Store(uint64(h.geom.dataBytes))
	word64(m, hJobHash).Store(h.hash)
	word64(m, hPid).Store(uint64(h.pid))
	word64(m, hMagic).Store(segMagic) // last: the header is complete
	return s, nil
}

// removeStale removes the file at path unless a live arena holds it.
func removeStale(path string) error {
	fd, _, err := openFile(path)
	if errors.Is(err, errNotReady) {
		return nil // no such file
	}
	if err != nil {
		return err
	}
	held, err := lockHeld(fd)
	_ = closeFile(fd) // read-only use; nothing to flush
	if err != nil {
		return err
	}
	if held {
		return fmt.Errorf("segment %s is in use by a live process (is the job ID unique per communicator?)", path)
	}
	if err := removeFile(path); err != nil {
		return fmt.Errorf("remove stale segment %s: %w", path, err)
	}
	return nil
}

// staleSeen, when set (tests only), is called each time openSegment finds
// a segment whose owner is gone.
var staleSeen func(path string)

// openSegment maps a peer's segment and checks its header against want.
// It returns errNotReady while the file is absent, not yet initialised, or
// a stale one whose owner is gone (its lock is free).
func openSegment(path string, want header) (*segment, error) {
	fd, size, err := openFile(path)
	if err != nil {
		return nil, err
	}
	s := &segment{path: path, fd: fd}
	if size < int64(headerSize) {
		s.release() // created but not sized yet: it is sized in one step
		return nil, errNotReady
	}
	if s.mem, err = mapFile(fd, int(size)); err != nil {
		s.release()
		return nil, err
	}
	if word64(s.mem, hMagic).Load() != segMagic {
		s.release()
		return nil, errNotReady
	}
	held, err := lockHeld(fd)
	if err != nil || !held {
		s.release()
		if err != nil {
			return nil, err
		}
		if staleSeen != nil {
			staleSeen(path)
		}
		return nil, errNotReady // left by a crashed run; its owner will replace it
	}
	if err := s.check(want, size); err != nil {
		s.release()
		return nil, err
	}
	return s, nil
}

// check compares a peer's header with what this rank expects.
func (s *segment) check(want header, size int64) error {
	m := s.mem
	got := header{
		nLocal: int(word64(m, hNLocal).Load()),
		index:  int(word64(m, hIndex).Load()),
		geom: geometry{
			inlineBytes: int(word64(m, hInlineBytes).Load()),
			dataBytes:   int(word64(m, hDataBytes).Load()),
		},
		hash: word64(m, hJobHash).Load(),
	}
	switch {
	case word64(m, hVersion).Load() != segVersion:
		return fmt.Errorf("segment %s: version %d, want %d", s.path, word64(m, hVersion).Load(), segVersion)
	case got.hash != want.hash:
		return fmt.Errorf("segment %s belongs to another job", s.path)
	case got.nLocal != want.nLocal || got.index != want.index:
		return fmt.Errorf("segment %s: local rank %d of %d, want %d of %d (different rank lists?)",
			s.path, got.index, got.nLocal, want.index, want.nLocal)
	case got.geom != want.geom:
		return fmt.Errorf("segment %s: InlineBytes/DataBytes %d/%d, this rank uses %d/%d (configs must match on all ranks)",
			s.path, got.geom.inlineBytes, got.geom.dataBytes, want.geom.inlineBytes, want.geom.dataBytes)
	case size != int64(want.geom.segmentSize()):
		return fmt.Errorf("segment %s: size %d, want %d", s.path, size, want.geom.segmentSize())
	}
	return nil
}

// pid is the owner's process ID as it wrote it (for error messages only:
// it may mean nothing in this PID namespace).
func (s *segment) pid() int { return int(word64(s.mem, hPid).Load()) }

// alive reports whether the owner still holds its lock: false once it has
// closed its arena or died.
func (s *segment) alive() (bool, error) { return lockHeld(s.fd) }

// closeFile closes the segment's file, keeping the mapping: the lock on it
// (the own segment's) is gone, and alive no longer works.
func (s *segment) closeFile() error {
	if s.fd < 0 {
		return nil
	}
	err := closeFile(s.fd)
	s.fd = -1
	if err != nil {
		return fmt.Errorf("close segment %s: %w", s.path, err)
	}
	return nil
}

// unlink removes the own segment's file; mappings stay valid.
func (s *segment) unlink() error {
	if !s.linked {
		return nil
	}
	s.linked = false
	if err := removeFile(s.path); err != nil {
		return fmt.Errorf("unlink segment %s: %w", s.path, err)
	}
	return nil
}

// release unlinks (own segment), unmaps and closes; it returns the first
// error.
func (s *segment) release() error {
	err := s.unlink()
	if s.mem != nil {
		if e := unmapFile(s.mem); e != nil && err == nil {
			err = fmt.Errorf("unmap segment %s: %w", s.path, e)
		}
		s.mem = nil
	}
	if s.fd >= 0 {
		if e := closeFile(s.fd); e != nil && err == nil {
			err = fmt.Errorf("close segment %s: %w", s.path, e)
		}
		s.fd = -1
	}
	return err
}

// processID is this process's ID, written into headers for messages.
func processID() int { return os.Getpid() }

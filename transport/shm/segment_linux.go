package shm

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// segmentPrefix starts the name of every segment file of this package.
const segmentPrefix = "hccl-go-"

// segmentPath names the segment of a rank: a short hash of the job ID (which
// may be long or contain any byte) and the rank.
func segmentPath(dir, jobID string, rank int) string {
	sum := sha256.Sum256([]byte(jobID))
	return filepath.Join(dir, fmt.Sprintf("%s%s-%d", segmentPrefix, hex.EncodeToString(sum[:8]), rank))
}

// segment is one mapped segment file.
type segment struct {
	path   string
	mem    []byte
	linked bool // the file may still be in the directory (only for our own)
}

// createSegment creates and maps a new zero-filled segment of size bytes at
// path, readable and writable by this user only. A file left there by a
// crashed run of the same job is removed first.
func createSegment(path string, size int) (*segment, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale segment: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create segment: %w", err)
	}
	defer f.Close()
	seg := &segment{path: path, linked: true}
	// Reserve the pages now: on a full tmpfs a sparse file would fail later
	// with SIGBUS on first touch instead of an error here.
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, int64(size)); err != nil {
		if !errors.Is(err, syscall.EOPNOTSUPP) {
			seg.unlink()
			return nil, fmt.Errorf("allocate %d bytes for segment %s: %w", size, path, err)
		}
		if err := f.Truncate(int64(size)); err != nil {
			seg.unlink()
			return nil, fmt.Errorf("size segment: %w", err)
		}
	}
	seg.mem, err = syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		seg.unlink()
		return nil, fmt.Errorf("map segment: %w", err)
	}
	return seg, nil
}

// errNotReady means a peer's segment does not exist or is not initialised
// yet: try again later.
var errNotReady = errors.New("segment not ready")

// ErrBadSecret means a peer's segment carries another proof of the job
// secret (Config.Proof): the ranks were given different secrets.
var ErrBadSecret = errors.New("the ranks were given different job secrets")

// openSegment maps the whole segment of a peer. The caller checks its header
// and size.
func openSegment(path string) (*segment, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNotReady
	}
	if err != nil {
		return nil, fmt.Errorf("open segment: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat segment: %w", err)
	}
	size := st.Size()
	if size < headerSize {
		return nil, errNotReady // created but not sized yet (it is sized at once, in one step)
	}
	if size > 1<<40 {
		return nil, fmt.Errorf("segment %s: implausible size %d", path, size)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map segment: %w", err)
	}
	return &segment{path: path, mem: mem}, nil
}

// unlink removes the segment's file; the mappings stay valid.
func (s *segment) unlink() {
	if s.linked {
		s.linked = false
		_ = os.Remove(s.path) // already gone is fine: a peer may have unlinked it
	}
}

// unmap releases the mapping. The caller guarantees nobody uses it any more.
func (s *segment) unmap() error {
	if s.mem == nil {
		return nil
	}
	err := syscall.Munmap(s.mem)
	s.mem = nil
	if err != nil {
		return fmt.Errorf("unmap segment %s: %w", s.path, err)
	}
	return nil
}

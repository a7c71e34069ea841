package symm

import (
	"errors"
	"fmt"
	"syscall"
)

// errNotReady means a peer's segment is absent, not initialised yet, or
// held by no live process: try again later.
var errNotReady = errors.New("segment not ready")

// segment is one mapped segment file with its descriptor kept open: the
// owner's holds the liveness lock, a peer's lets us test it.
type segment struct {
	path   string
	fd     int
	mem    []byte
	linked bool // own segment only: the file may still be in the directory
}

const (
	fOFDGetlk = 36 // F_OFD_GETLK
	fOFDSetlk = 37 // F_OFD_SETLK
)

// createSegment creates, locks and maps a zero-filled segment of size bytes
// at path. The pages are reserved now, so a full tmpfs fails here and not
// later with SIGBUS on first touch.
func createSegment(path string, size int) (*segment, error) {
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create segment %s: %w", path, err)
	}
	s := &segment{path: path, fd: fd, linked: true}
	if err := syscall.Fallocate(fd, 0, 0, int64(size)); err != nil {
		if !errors.Is(err, syscall.EOPNOTSUPP) {
			s.release()
			return nil, fmt.Errorf("allocate %d bytes for segment %s: %w", size, path, err)
		}
		if err := syscall.Ftruncate(fd, int64(size)); err != nil {
			s.release()
			return nil, fmt.Errorf("size segment %s: %w", path, err)
		}
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Len: 1}
	if err := syscall.FcntlFlock(uintptr(fd), fOFDSetlk, &lk); err != nil {
		s.release()
		return nil, fmt.Errorf("lock segment %s: %w", path, err)
	}
	if s.mem, err = syscall.Mmap(fd, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED); err != nil {
		s.release()
		return nil, fmt.Errorf("map segment %s: %w", path, err)
	}
	return s, nil
}

// openSegment maps a peer's segment of size bytes once its header is
// complete and its owner holds the lock; errNotReady before.
func openSegment(path string, size int) (*segment, error) {
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENOENT) {
		return nil, errNotReady
	}
	if err != nil {
		return nil, fmt.Errorf("open segment %s: %w", path, err)
	}
	s := &segment{path: path, fd: fd}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		s.release()
		return nil, fmt.Errorf("stat segment %s: %w", path, err)
	}
	if st.Size != int64(size) {
		s.release()
		if st.Size == 0 {
			return nil, errNotReady // created, not sized yet (it is sized in one step)
		}
		return nil, fmt.Errorf("segment %s: size %d, want %d", path, st.Size, size)
	}
	if s.mem, err = syscall.Mmap(fd, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED); err != nil {
		s.release()
		return nil, fmt.Errorf("map segment %s: %w", path, err)
	}
	held, err := s.alive()
	if err != nil || !held || word64(s.mem, hMagic).Load() != segMagic {
		s.release()
		if err != nil {
			return nil, err
		}
		return nil, errNotReady
	}
	return s, nil
}

// alive reports whether the segment's owner still holds its lock: false
// once it has closed its window or died.
func (s *segment) alive() (bool, error) {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Len: 1}
	if err := syscall.FcntlFlock(uintptr(s.fd), fOFDGetlk, &lk); err != nil {
		return false, fmt.Errorf("test lock of segment %s: %w", s.path, err)
	}
	return lk.Type != syscall.F_UNLCK, nil
}

// unlink removes the own segment's file; mappings stay valid.
func (s *segment) unlink() error {
	if !s.linked {
		return nil
	}
	s.linked = false
	if err := syscall.Unlink(s.path); err != nil && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("unlink segment %s: %w", s.path, err)
	}
	return nil
}

// release unlinks (own segment), unmaps and closes; the first error wins.
func (s *segment) release() error {
	err := s.unlink()
	if s.mem != nil {
		if e := syscall.Munmap(s.mem); e != nil && err == nil {
			err = fmt.Errorf("unmap segment %s: %w", s.path, e)
		}
		s.mem = nil
	}
	if s.fd >= 0 {
		if e := syscall.Close(s.fd); e != nil && err == nil {
			err = fmt.Errorf("close segment %s: %w", s.path, e)
		}
		s.fd = -1
	}
	return err
}

// removeOrphan removes the file at path when no live process holds its
// lock: a peer that died during Alloc leaves its file, and nobody else would
// remove it.
func removeOrphan(path string) {
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	s := &segment{path: path, fd: fd}
	if held, err := s.alive(); err == nil && !held {
		_ = syscall.Unlink(path)
	}
	_ = s.release()
}

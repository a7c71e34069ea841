//go:build !linux

package arena

import (
	"errors"
	"sync/atomic"
	"time"
)

// errUnsupported: arenas need Linux (futexes on shared mappings, OFD locks).
var errUnsupported = errors.New("arena: shared-memory arenas need Linux")

func sleepOn(*atomic.Uint32, uint32, time.Duration) error { return errUnsupported }
func wakeAll(*atomic.Uint32)                              {}

type yielder struct{}

func (*yielder) Yield()                   {}
func lockFile(int) error                  { return errUnsupported }
func lockHeld(int) (bool, error)          { return false, errUnsupported }
func createFile(string, int) (int, error) { return -1, errUnsupported }
func openFile(string) (int, int64, error) { return -1, 0, errUnsupported }
func mapFile(int, int) ([]byte, error)    { return nil, errUnsupported }
func unmapFile([]byte) error              { return errUnsupported }
func closeFile(int) error                 { return errUnsupported }
func removeFile(string) error             { return errUnsupported }

func threadCPU() (int, bool)           { return 0, false }
func moveOff(func(int) bool, int) bool { return false }

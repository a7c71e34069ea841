package main

/*
#include "hccl_go.h"
#include "symm_spans.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/pgbackend"
	"github.com/hccl-go/hccl-go/topo"
	"github.com/hccl-go/hccl-go/transport/symm"
)

// Symmetric memory through the C ABI (transport/symm): hcclGoMemAlloc
// makes an allocation, known by the address of its data; windows are
// handles on allocations. An allocation's mapping lives until
// hcclGoMemFree and every window on it are gone, whatever happens to its
// communicator meanwhile.

// allocEntry is one allocation: its window stays open until hcclGoMemFree
// and every window handle on it are gone (guarded by allocsMu).
type allocEntry struct {
	w       *symm.Window
	base    uintptr
	comm    uint64
	windows int
	freed   bool
	// owner runs its all_reduces on this allocation in place (nil: not
	// registered, see register).
	owner *pgbackend.Communicator
	// c serves the allocation to ranks of other hosts through remote.
	c      *pgbackend.Communicator
	remote symm.Remote
}

// windowEntry is a window handle: a reference on its allocation.
type windowEntry struct{ a *allocEntry }

// The allocations by the address of their data, and the windows.
var (
	allocsMu sync.Mutex
	allocs   = map[uintptr]*allocEntry{}
	windows  = newTable[*windowEntry]()
)

// symmResult maps an error of transport/symm to a result code.
func symmResult(err error) C.hcclGoResult_t {
	switch {
	case errors.Is(err, symm.ErrInvalid):
		return C.hcclGoInvalidArgument
	case errors.Is(err, symm.ErrCrossHost):
		return C.hcclGoNotSupported
	case errors.Is(err, symm.ErrTimeout):
		return C.hcclGoTimeout
	case errors.Is(err, symm.ErrClosed):
		return C.hcclGoInvalidUsage
	}
	return resultOf(err)
}

// failSymm records err as the last error of calls without a communicator
// (hcclGoGetLastError(0)) and returns its code.
func failSymm(err error) C.hcclGoResult_t {
	_ = fail(nil, err)
	return symmResult(err)
}

// hostIdentity is this process's host for shared memory (HCCL_GO_HOST_ID
// read from the live environment first).
func hostIdentity() (string, error) {
	if v, ok := cGetenv(topo.HostIDEnv); ok && v != "" {
		return v, nil
	}
	return topo.LocalIdentity()
}

//export goMemAlloc
func goMemAlloc(h C.hcclGoComm_t, size C.size_t, ptr *unsafe.Pointer) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, err := lookupComm(h)
	if err != nil {
		return fail(nil, err)
	}
	if ptr == nil {
		return fail(e, invalid("hcclGoMemAlloc: ptr is NULL"))
	}
	if uint64(size) > math.MaxInt32*uint64(4096) {
		return fail(e, invalid("hcclGoMemAlloc: %d bytes is more than this library allocates", uint64(size)))
	}
	host, err := hostIdentity()
	if err != nil {
		return fail(e, fmt.Errorf("hcclGoMemAlloc: host identity: %w", err))
	}
	c := e.c
	timeout := c.Config().Timeout
	exchange := func(ctx context.Context, send, recv []byte) error {
		w, err := c.AllGather(send, recv, pgbackend.StreamDefault)
		if err != nil {
			return err
		}
		return w.Wait(ctx, timeout)
	}
	remote := c.SymmRemote()
	win, err := symm.Alloc(context.Background(), symm.Spec{
		Rank: c.Rank(), Size: c.Size(), Bytes: int(size), HostID: host, Timeout: timeout, Remote: remote,
	}, exchange)
	if err != nil {
		_ = fail(e, fmt.Errorf("hcclGoMemAlloc: %w", err))
		return symmResult(err)
	}
	base := regionBase(win)
	a := &allocEntry{w: win, base: uintptr(base), comm: uint64(h), c: c, remote: remote}
	c.ServeSymm(remote, win)
	register(a, c)
	allocsMu.Lock()
	allocs[uintptr(base)] = a
	allocsMu.Unlock()
	*ptr = base
	return C.hcclGoSuccess
}

// register lets c run collectives on a's memory in place, when every rank
// of c is on this host: C's lane must decline them too (symm_spans.c), so
// an allocation C cannot note is not registered (its ops take the arena,
// on every rank alike as long as ranks hold as many allocations). No op
// names the memory before hcclGoMemAlloc returns, so the order of the two
// registrations does not matter.
func register(a *allocEntry, c *pgbackend.Communicator) {
	if !c.RegisterWindow(a.w) {
		return // a rank of another host: the usual paths
	}
	C.hg_symm_min_bytes = C.size_t(pgbackend.SymmetricMinBytes)
	C.hg_symm_block_min_bytes = C.size_t(pgbackend.SymmetricBlockMinBytes)
	if C.hg_symm_add(C.uintptr_t(a.base), C.size_t(a.w.Bytes())) == 0 {
		c.UnregisterWindow(a.w)
		return
	}
	a.owner = c
}

// regionBase is the address of a window's own data region: unique per
// allocation, since every allocation is a mapping of its own.
func regionBase(w *symm.Window) unsafe.Pointer {
	r, _ := w.Region(w.Rank())
	return unsafe.Pointer(unsafe.SliceData(r[:cap(r)]))
}

// dropLocked closes a's window once it is freed and has no window left;
// the caller holds allocsMu.
func dropLocked(a *allocEntry) error {
	if !a.freed || a.windows > 0 {
		return nil
	}
	delete(allocs, a.base)
	a.c.StopSymm(a.remote)
	if a.owner != nil {
		a.owner.UnregisterWindow(a.w)
		C.hg_symm_remove(C.uintptr_t(a.base))
	}
	return a.w.Close()
}

//export goMemFree
func goMemFree(ptr unsafe.Pointer) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	if ptr == nil {
		return C.hcclGoSuccess
	}
	allocsMu.Lock()
	defer allocsMu.Unlock()
	a, ok := allocs[uintptr(ptr)]
	if !ok || a.freed {
		return fail(nil, fmt.Errorf("%w: hcclGoMemFree: %p is not memory from hcclGoMemAlloc, or was freed already", errInvalidHandle, ptr))
	}
	a.freed = true
	if err := dropLocked(a); err != nil {
		return fail(nil, fmt.Errorf("hcclGoMemFree: %w", err))
	}
	return C.hcclGoSuccess
}

//export goWindowCreate
func goWindowCreate(h C.hcclGoComm_t, ptr unsafe.Pointer, win *C.hcclGoWindow_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	if win == nil {
		return fail(nil, invalid("hcclGoWindowCreate: win is NULL"))
	}
	allocsMu.Lock()
	defer allocsMu.Unlock()
	a, ok := allocs[uintptr(ptr)]
	if !ok || a.freed {
		return fail(nil, invalid("hcclGoWindowCreate: %p is not the address hcclGoMemAlloc returned (or it was freed)", ptr))
	}
	if a.comm != uint64(h) {
		return fail(nil, invalid("hcclGoWindowCreate: the memory at %p was allocated on communicator %d, not %d", ptr, a.comm, uint64(h)))
	}
	a.windows++
	*win = C.hcclGoWindow_t(windows.put(&windowEntry{a: a}))
	return C.hcclGoSuccess
}

//export goWindowDestroy
func goWindowDestroy(h C.hcclGoWindow_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	we, ok := windows.remove(uint64(h))
	if !ok {
		return fail(nil, fmt.Errorf("%w: window %d does not exist (destroyed, or never created)", errInvalidHandle, uint64(h)))
	}
	allocsMu.Lock()
	defer allocsMu.Unlock()
	we.a.windows--
	if err := dropLocked(we.a); err != nil {
		return fail(nil, fmt.Errorf("hcclGoWindowDestroy: %w", err))
	}
	return C.hcclGoSuccess
}

func lookupWindow(h C.hcclGoWindow_t) (*windowEntry, error) {
	we, ok := windows.get(uint64(h))
	if !ok {
		return nil, fmt.Errorf("%w: window %d does not exist (destroyed, or never created)", errInvalidHandle, uint64(h))
	}
	return we, nil
}

//export goWindowPeerPtr
func goWindowPeerPtr(h C.hcclGoWindow_t, peer C.int, ptr *unsafe.Pointer, size *C.size_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	we, err := lookupWindow(h)
	if err != nil {
		return fail(nil, err)
	}
	if ptr == nil {
		return failSymm(invalid("hcclGoWindowPeerPtr: ptr is NULL"))
	}
	region, err := we.a.w.Region(int(peer))
	if err != nil {
		return failSymm(fmt.Errorf("hcclGoWindowPeerPtr: %w", err))
	}
	*ptr = unsafe.Pointer(unsafe.SliceData(region[:cap(region)]))
	if len(region) == 0 {
		*ptr = nil
	}
	if size != nil {
		*size = C.size_t(len(region))
	}
	return C.hcclGoSuccess
}

// elemSpan turns a count and an offset in elements of dt into bytes.
func elemSpan(op string, buf unsafe.Pointer, count, offset C.size_t, dt C.hcclGoDataType_t) ([]byte, int, error) {
	d := reduce.DType(dt)
	b, err := cBuf(op+" buffer", buf, count, d)
	if err != nil {
		return nil, 0, err
	}
	if uint64(offset) > uint64(math.MaxInt)/uint64(d.Size()) {
		return nil, 0, invalid("%s: offset %d overflows", op, uint64(offset))
	}
	return b, int(offset) * d.Size(), nil
}

//export goPut
func goPut(src unsafe.Pointer, count C.size_t, dt C.hcclGoDataType_t, peer C.int, offset C.size_t, h C.hcclGoWindow_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	we, err := lookupWindow(h)
	if err != nil {
		return fail(nil, err)
	}
	b, off, err := elemSpan("hcclGoPut", src, count, offset, dt)
	if err == nil {
		err = we.a.w.Put(b, int(peer), off)
	}
	if err != nil {
		return failSymm(fmt.Errorf("hcclGoPut: %w", err))
	}
	return C.hcclGoSuccess
}

//export goGet
func goGet(dst unsafe.Pointer, count C.size_t, dt C.hcclGoDataType_t, peer C.int, offset C.size_t, h C.hcclGoWindow_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	we, err := lookupWindow(h)
	if err != nil {
		return fail(nil, err)
	}
	b, off, err := elemSpan("hcclGoGet", dst, count, offset, dt)
	if err == nil {
		err = we.a.w.Get(b, int(peer), off)
	}
	if err != nil {
		return failSymm(fmt.Errorf("hcclGoGet: %w", err))
	}
	return C.hcclGoSuccess
}

//export goSignal
func goSignal(h C.hcclGoWindow_t, peer C.int) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	we, err := lookupWindow(h)
	if err != nil {
		return fail(nil, err)
	}
	if err := we.a.w.Signal(int(peer)); err != nil {
		return failSymm(fmt.Errorf("hcclGoSignal: %w", err))
	}
	return C.hcclGoSuccess
}

// timeoutOf is a call's timeout: timeoutMs < 0 is the window's (0 passes
// through as the window's too, see hcclGoWaitSignal).
func timeoutOf(ms C.int64_t) time.Duration {
	if ms < 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

//export goWaitSignal
func goWaitSignal(h C.hcclGoWindow_t, peer C.int, timeoutMs C.int64_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	we, err := lookupWindow(h)
	if err != nil {
		return fail(nil, err)
	}
	if err := we.a.w.WaitSignal(context.Background(), int(peer), timeoutOf(timeoutMs)); err != nil {
		return failSymm(fmt.Errorf("hcclGoWaitSignal: %w", err))
	}
	return C.hcclGoSuccess
}

//export goWindowBarrier
func goWindowBarrier(h C.hcclGoWindow_t, timeoutMs C.int64_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	we, err := lookupWindow(h)
	if err != nil {
		return fail(nil, err)
	}
	if err := we.a.w.Barrier(context.Background(), timeoutOf(timeoutMs)); err != nil {
		return failSymm(fmt.Errorf("hcclGoWindowBarrier: %w", err))
	}
	return C.hcclGoSuccess
}

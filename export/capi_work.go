package main

/*
#include <stdlib.h>
#include "hccl_go.h"

void hcclGoInvokeCallback(hcclGoCallback_t cb, void* userData, hcclGoWork_t work, hcclGoResult_t status, const char* msg);

// The message of a successful op: a constant, so that a success costs no
// C allocation.
static inline const char* hcclGoNoMessage(void) { return ""; }
*/
import "C"

import (
	"context"
	"fmt"
	"time"
	"unsafe"
)

func lookupWork(h C.hcclGoWork_t) (*workEntry, error) {
	w, ok := works.get(uint64(h))
	if !ok {
		return nil, fmt.Errorf("%w: work %d does not exist (freed, or never created)", errInvalidHandle, uint64(h))
	}
	return w, nil
}

//export goWorkWait
func goWorkWait(h C.hcclGoWork_t, timeoutMs C.int64_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, err := lookupWork(h)
	if err != nil {
		return fail(nil, err)
	}
	timeout := time.Duration(timeoutMs) * time.Millisecond
	if timeoutMs < 0 {
		timeout = e.comm.c.Config().Timeout
	}
	// A caller about to block runs the op itself when it is next in line:
	// no hand-off to the stream's goroutine and back. Not when it would give
	// up before the op's own timeout: an op run inline holds its caller until
	// it ends, so a library thread runs it and the wait stays bounded.
	if timeout <= 0 || timeout >= e.comm.c.Config().Timeout {
		e.w.RunInline()
	} else {
		e.w.Start()
	}
	if err := e.w.Wait(context.Background(), timeout); err != nil {
		return fail(e.comm, err)
	}
	return C.hcclGoSuccess
}

//export goWorkTest
func goWorkTest(h C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, err := lookupWork(h)
	if err != nil {
		return fail(nil, err)
	}
	return e.status()
}

// status is the op's result code: hcclGoInProgress until it completes.
func (e *workEntry) status() C.hcclGoResult_t {
	done, err := e.w.Test()
	switch {
	case !done:
		return C.hcclGoInProgress
	case err != nil:
		return fail(e.comm, err)
	default:
		return C.hcclGoSuccess
	}
}

//export goWorkError
func goWorkError(h C.hcclGoWork_t, buf *C.char, length C.size_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, err := lookupWork(h)
	if err != nil {
		return fail(nil, err)
	}
	msg := ""
	if werr := e.w.Err(); werr != nil {
		msg = werr.Error()
	}
	copyOut(buf, length, msg)
	return C.hcclGoSuccess
}

//export goWorkSetCallback
func goWorkSetCallback(h C.hcclGoWork_t, cb C.hcclGoCallback_t, userData unsafe.Pointer) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, err := lookupWork(h)
	if err != nil {
		return fail(nil, err)
	}
	if cb == nil {
		return fail(e.comm, invalid("hcclGoWorkSetCallback: callback is NULL"))
	}
	// userData is the caller's opaque C pointer: kept as a value, never
	// dereferenced by Go.
	e.w.OnComplete(func(werr error) {
		if werr == nil {
			C.hcclGoInvokeCallback(cb, userData, h, C.hcclGoSuccess, C.hcclGoNoMessage())
			return
		}
		cmsg := C.CString(werr.Error())
		defer C.free(unsafe.Pointer(cmsg))
		C.hcclGoInvokeCallback(cb, userData, h, resultOf(werr), cmsg)
	})
	return C.hcclGoSuccess
}

//export goWorkStart
func goWorkStart(h C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, err := lookupWork(h)
	if err != nil {
		return fail(nil, err)
	}
	e.w.Start()
	return C.hcclGoSuccess
}

//export goWorkFree
func goWorkFree(h C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	if _, ok := works.remove(uint64(h)); !ok {
		_, err := lookupWork(h)
		return fail(nil, err)
	}
	return C.hcclGoSuccess
}

package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include -O2 -Wall
#include "hccl_go.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/hccl-go/hccl-go/pgbackend"
)

var errInvalidHandle = errors.New("invalid handle")

// resultOf maps an error to the C result code.
func resultOf(err error) C.hcclGoResult_t {
	if errors.Is(err, errInvalidHandle) {
		return C.hcclGoInvalidUsage
	}
	switch pgbackend.Classify(err) {
	case pgbackend.ClassNone:
		return C.hcclGoSuccess
	case pgbackend.ClassInvalidArgument:
		return C.hcclGoInvalidArgument
	case pgbackend.ClassInvalidUsage:
		return C.hcclGoInvalidUsage
	case pgbackend.ClassRemote:
		return C.hcclGoRemoteError
	case pgbackend.ClassTimeout:
		return C.hcclGoTimeout
	case pgbackend.ClassAborted:
		return C.hcclGoAborted
	case pgbackend.ClassInternal:
		return C.hcclGoInternalError
	default:
		return C.hcclGoSystemError
	}
}

// fail records err as the last error of comm (or the global one when comm is
// nil) and returns its result code.
func fail(comm *commEntry, err error) C.hcclGoResult_t {
	msg := err.Error()
	if comm != nil {
		comm.setError(msg)
	}
	// Also keep it globally: a caller holding no comm handle (or a stale
	// one) still finds the message with hcclGoGetLastError(0).
	globalErrMu.Lock()
	globalErr = msg
	globalErrMu.Unlock()
	return resultOf(err)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", pgbackend.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// recoverPanic turns a panic in an exported function into
// hcclGoInternalError: a Go panic must never unwind into C.
func recoverPanic(rc *C.hcclGoResult_t) {
	if r := recover(); r != nil {
		globalErrMu.Lock()
		globalErr = fmt.Sprintf("hccl_go internal error: panic: %v\n%s", r, debug.Stack())
		globalErrMu.Unlock()
		*rc = C.hcclGoInternalError
	}
}

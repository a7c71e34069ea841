package main

/*
#include "hccl_go.h"
*/
import "C"

import "fmt"

// The flight recorder through the C ABI: dump a communicator's last ops
// as JSON on request, and learn where dumps go by default.

//export goCommDumpTrace
func goCommDumpTrace(h C.hcclGoComm_t, path *C.char) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, err := lookupComm(h)
	if err != nil {
		return fail(nil, err)
	}
	p := ""
	if path != nil {
		p = C.GoString(path)
	}
	if _, err := e.c.DumpTrace(p, "requested"); err != nil {
		return fail(e, fmt.Errorf("hcclGoCommDumpTrace: %w", err))
	}
	return C.hcclGoSuccess
}

//export goCommTracePath
func goCommTracePath(h C.hcclGoComm_t, buf *C.char, length C.size_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, err := lookupComm(h)
	if err != nil {
		return fail(nil, err)
	}
	if buf == nil || length == 0 {
		return fail(e, invalid("hcclGoCommTracePath: buf is NULL or empty"))
	}
	p := e.c.TracePath()
	if int(length) <= len(p) {
		return fail(e, invalid("hcclGoCommTracePath: buf of %d bytes is too small for %q", int(length), p))
	}
	copyOut(buf, length, p)
	return C.hcclGoSuccess
}

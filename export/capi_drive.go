package main

/*
#include "hccl_go.h"
*/
import "C"

// goWorkDrive runs the op on the calling thread if it is next on its
// stream, else starts it on a library thread (hcclGoWorkStart) and returns
// hcclGoInProgress at once; on a completed op it returns the op's status.
// For a caller that follows the op through its callback and lends a thread
// that must not block behind earlier ops (the c10d backend's completion
// threads, for ops followed through a Future).
//
//export goWorkDrive
func goWorkDrive(h C.hcclGoWork_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, err := lookupWork(h)
	if err != nil {
		return fail(nil, err)
	}
	e.w.RunInline()
	rc = e.status()
	if rc == C.hcclGoInProgress {
		e.w.Start()
	}
	return rc
}

package main

/*
#include "hccl_go.h"
*/
import "C"

import "runtime"

// A C thread that calls into Go runs on a processor (P) it keeps between
// calls, and it runs only its own calls there, never the Go scheduler. The
// runtime's monitor thread (sysmon) takes for stuck any P whose scheduler
// has run nothing for 10 ms: it preempts it and takes it away at its next
// look, and every such take-over puts sysmon back to looking every 20 µs,
// preempting busy cores; a thread that then gets a P idle for 10 ms or more
// loses it again within 20 µs. With the training loop and a completion
// thread calling in, DDP's small steps ran in that storm (see maxprocs.go).
//
// So each thread refreshes its P now and then: hccl_go.c keeps, per thread,
// when it last did, and on entry to the library calls goRefreshProcessor
// once HCCL_GO_REFRESH_MS (default 2; 0: never) have passed. The yield goes
// through the scheduler and back (a hand-off of the P to another thread and
// back, ~10-30 µs), which marks the P as scheduling again.

//export goRefreshProcessor
func goRefreshProcessor() {
	runtime.Gosched()
}

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
// once HCCL_GO_REFRESH_MS (default 8; 0: never) have passed. The yield goes
// through the scheduler and back: the calling goroutine is locked to its
// thread, so the P goes to another thread and comes back, two thread
// wake-ups (10-30 µs with a CPU idle, 60-140 µs on a busy 2-CPU VM). The
// call that pays for it is the first one after a pause as long as the
// period, so the period is as long as sysmon allows: 8 ms keeps a thread
// that calls in steadily refreshed before sysmon's 10 ms, and a pause of
// 2-8 ms (a backward layer, the data loader) costs the next op nothing.
// After a pause of 10 ms or more sysmon has taken the P anyway, and the
// refresh on the next call keeps it from taking the new one.

//export goRefreshProcessor
func goRefreshProcessor() {
	runtime.Gosched()
}

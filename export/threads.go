package main

/*
#include "hccl_go.h"

int hccl_go_threads_alive(void);
*/
import "C"

// The calling threads the automatic GOMAXPROCS policy sizes for
// (maxprocs.go), as hccl_go.c counts them: a C thread on its first call into
// the library, until it exits.

// goThreadEntered is called by hccl_go.c on a C thread's first call into
// the library, after counting it.
//
//export goThreadEntered
func goThreadEntered() {
	procs.threadEntered()
}

// goThreadsExited is called by hccl_go.c on the first call into the library
// after one or more counted threads have exited.
//
//export goThreadsExited
func goThreadsExited() {
	procs.threadsExited()
}

// liveThreads is the number of counted threads that have not exited.
func liveThreads() int {
	return int(C.hccl_go_threads_alive())
}

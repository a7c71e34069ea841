package main

/*
#include "hccl_go.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/hccl-go/hccl-go/pgbackend"
	"github.com/hccl-go/hccl-go/transport/tcp"
)

func lookupComm(h C.hcclGoComm_t) (*commEntry, error) {
	e, ok := comms.get(uint64(h))
	if !ok {
		return nil, fmt.Errorf("%w: communicator %d does not exist (destroyed, or never created)", errInvalidHandle, uint64(h))
	}
	return e, nil
}

//export goGetLastError
func goGetLastError(comm C.hcclGoComm_t, buf *C.char, length C.size_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	msg := ""
	if e, ok := comms.get(uint64(comm)); ok && comm != 0 {
		msg = e.lastError()
	} else {
		globalErrMu.Lock()
		msg = globalErr
		globalErrMu.Unlock()
	}
	copyOut(buf, length, msg)
	return C.hcclGoSuccess
}

//export goListen
func goListen(bindAddr *C.char, listener *C.hcclGoListener_t, addr *C.char, addrLen C.size_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	if listener == nil || addr == nil || addrLen == 0 {
		return fail(nil, invalid("hcclGoListen: listener and addr must not be NULL"))
	}
	cfg, err := pgbackend.ConfigFrom(cGetenv)
	if err != nil {
		return fail(nil, invalid("%v", err))
	}
	var l *tcp.Listener
	if bindAddr != nil && C.GoString(bindAddr) != "" {
		l, err = tcp.Listen(C.GoString(bindAddr))
	} else {
		l, err = pgbackend.Listen(cfg)
	}
	if err != nil {
		return fail(nil, err)
	}
	return handOutListener(l, listener, addr, addrLen)
}

//export goListenRank
func goListenRank(nranks, rank C.int, hostIDs **C.char, storeHost, options *C.char, listener *C.hcclGoListener_t, addr *C.char, addrLen C.size_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	if listener == nil || addr == nil || addrLen == 0 {
		return fail(nil, invalid("hcclGoListenRank: listener and addr must not be NULL"))
	}
	if nranks < 1 || rank < 0 || rank >= nranks {
		return fail(nil, invalid("hcclGoListenRank: rank %d out of range for %d ranks", int(rank), int(nranks)))
	}
	cfg, err := pgbackend.ConfigFrom(cGetenv)
	if err == nil && options != nil {
		err = cfg.ApplyOptions(C.GoString(options))
	}
	if err != nil {
		return fail(nil, invalid("hcclGoListenRank: %v", err))
	}
	h := pgbackend.ListenHints{Rank: int(rank), HostIDs: cStrings(hostIDs, int(nranks))}
	if storeHost != nil {
		h.StoreHost = C.GoString(storeHost)
	}
	l, err := pgbackend.ListenRank(cfg, h)
	if err != nil {
		return fail(nil, err)
	}
	return handOutListener(l, listener, addr, addrLen)
}

// handOutListener registers l and writes its handle and address for C.
func handOutListener(l *tcp.Listener, listener *C.hcclGoListener_t, addr *C.char, addrLen C.size_t) C.hcclGoResult_t {
	a := l.Addr()
	if int(addrLen) <= len(a) {
		l.Close()
		return fail(nil, invalid("hcclGoListen: addr buffer of %d bytes is too small for %q", int(addrLen), a))
	}
	copyOut(addr, addrLen, a)
	*listener = C.hcclGoListener_t(listeners.put(l))
	return C.hcclGoSuccess
}

//export goListenerClose
func goListenerClose(h C.hcclGoListener_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	l, ok := listeners.remove(uint64(h))
	if !ok {
		return fail(nil, fmt.Errorf("%w: listener %d does not exist", errInvalidHandle, uint64(h)))
	}
	l.Close()
	return C.hcclGoSuccess
}

// cStrings copies n C strings (they may be freed once the call returns).
func cStrings(p **C.char, n int) []string {
	if p == nil {
		return nil
	}
	out := make([]string, n)
	for i, s := range unsafe.Slice(p, n) {
		if s != nil {
			out[i] = C.GoString(s)
		}
	}
	return out
}

//export goCommInitRank
func goCommInitRank(comm *C.hcclGoComm_t, nranks, rank C.int, lh C.hcclGoListener_t, peerAddrs, hostIDs **C.char, secret, options *C.char) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	// The listener is consumed by every call, failed ones included, so that
	// the caller never has to tell which failures left it open.
	l, ok := listeners.remove(uint64(lh))
	if !ok {
		return fail(nil, fmt.Errorf("%w: listener %d does not exist (already consumed?)", errInvalidHandle, uint64(lh)))
	}
	refuse := func(format string, args ...any) C.hcclGoResult_t {
		l.Close()
		return fail(nil, invalid("hcclGoCommInitRank: "+format, args...))
	}
	if comm == nil {
		return refuse("comm is NULL")
	}
	if nranks < 1 || rank < 0 || rank >= nranks {
		return refuse("rank %d out of range for %d ranks", int(rank), int(nranks))
	}
	if peerAddrs == nil {
		return refuse("peerAddrs is NULL")
	}
	cfg, err := pgbackend.ConfigFrom(cGetenv)
	if err == nil && options != nil {
		err = cfg.ApplyOptions(C.GoString(options))
	}
	if err != nil {
		return refuse("%v", err)
	}
	rv := pgbackend.Rendezvous{
		Rank:    int(rank),
		Addrs:   cStrings(peerAddrs, int(nranks)),
		HostIDs: cStrings(hostIDs, int(nranks)),
	}
	var explicit string
	if secret != nil {
		explicit = C.GoString(secret)
	}
	if rv.Secret, err = pgbackend.JobSecret(explicit, cGetenv, cfg.Unauthenticated); err != nil {
		return refuse("%v", err)
	}
	if err := applyMaxProcs(rv.HostIDs, rv.Rank); err != nil {
		return refuse("%v", err)
	}
	c, err := pgbackend.Connect(context.Background(), l, rv, cfg)
	if err != nil {
		return fail(nil, err)
	}
	e := &commEntry{c: c}
	h := comms.put(e)
	registerLane(h, e)
	*comm = C.hcclGoComm_t(h)
	return C.hcclGoSuccess
}

//export goCommSplit
func goCommSplit(parent C.hcclGoComm_t, nranks C.int, ranks *C.int, name, options *C.char, child *C.hcclGoComm_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	pe, err := lookupComm(parent)
	if err != nil {
		return fail(nil, err)
	}
	if child == nil || ranks == nil || name == nil {
		return fail(pe, invalid("hcclGoCommSplit: child, ranks and name must not be NULL"))
	}
	if nranks < 1 || int(nranks) > pe.c.Size() {
		return fail(pe, invalid("hcclGoCommSplit: %d ranks of a communicator of %d", int(nranks), pe.c.Size()))
	}
	members := make([]int, int(nranks))
	for i, r := range unsafe.Slice(ranks, int(nranks)) {
		members[i] = int(r)
	}
	cfg, err := pgbackend.ConfigFrom(cGetenv)
	if err == nil && options != nil {
		err = cfg.ApplyOptions(C.GoString(options))
	}
	if err != nil {
		return fail(pe, invalid("hcclGoCommSplit: %v", err))
	}
	c, err := pe.c.Split(context.Background(), C.GoString(name), members, cfg)
	if err != nil {
		return fail(pe, err)
	}
	e := &commEntry{c: c}
	h := comms.put(e)
	registerLane(h, e)
	*child = C.hcclGoComm_t(h)
	return C.hcclGoSuccess
}

//export goCommAbort
func goCommAbort(h C.hcclGoComm_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, err := lookupComm(h)
	if err != nil {
		return fail(nil, err)
	}
	e.c.Abort()
	return C.hcclGoSuccess
}

//export goCommDestroy
func goCommDestroy(h C.hcclGoComm_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, ok := comms.remove(uint64(h))
	if !ok {
		_, err := lookupComm(h)
		return fail(nil, err)
	}
	stopLane(uint64(h), e)
	err := e.c.Destroy()
	freeLane(uint64(h), e)
	if err != nil {
		return fail(nil, err)
	}
	return C.hcclGoSuccess
}

//export goCommCount
func goCommCount(h C.hcclGoComm_t, count *C.int) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, err := lookupComm(h)
	if err != nil {
		return fail(nil, err)
	}
	if count == nil {
		return fail(e, invalid("hcclGoCommCount: count is NULL"))
	}
	*count = C.int(e.c.Size())
	return C.hcclGoSuccess
}

//export goCommUserRank
func goCommUserRank(h C.hcclGoComm_t, rank *C.int) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, err := lookupComm(h)
	if err != nil {
		return fail(nil, err)
	}
	if rank == nil {
		return fail(e, invalid("hcclGoCommUserRank: rank is NULL"))
	}
	*rank = C.int(e.c.Rank())
	return C.hcclGoSuccess
}

//export goCommInfo
func goCommInfo(h C.hcclGoComm_t, buf *C.char, length C.size_t) (rc C.hcclGoResult_t) {
	defer recoverPanic(&rc)
	e, err := lookupComm(h)
	if err != nil {
		return fail(nil, err)
	}
	if buf == nil || length == 0 {
		return fail(e, invalid("hcclGoCommInfo: buf is NULL or empty"))
	}
	info := e.c.Info()
	if e.lane != nil {
		info.FastLane = "c"
		info.FastLaneOps = laneRan(uint64(h))
	}
	b, err := json.Marshal(info)
	if err != nil {
		return fail(e, err)
	}
	copyOut(buf, length, string(b))
	return C.hcclGoSuccess
}

package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/inproc"
	"github.com/hccl-go/hccl-go/transport/tcp"
)

// connect builds the endpoints of np ranks inside this process, over
// loopback TCP (one listener per rank) or in-process channels.
func connect(kind string, np, streams int) ([]transport.Endpoint, error) {
	switch kind {
	case "inproc":
		return inproc.NewGroup(np), nil
	case "tcp":
		return connectTCP(np, streams)
	default:
		return nil, fmt.Errorf("unknown transport %q (want tcp or inproc)", kind)
	}
}

func connectTCP(np, streams int) ([]transport.Endpoint, error) {
	ls := make([]*tcp.Listener, np)
	addrs := make([]string, np)
	for i := range np {
		l, err := tcp.Listen("127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls[i], addrs[i] = l, l.Addr()
	}
	cfg := tcp.Config{Secret: []byte("allreduce-bench"), StreamsPerPeer: streams, ConnectTimeout: 30 * time.Second}
	eps := make([]transport.Endpoint, np)
	errs := make([]error, np)
	var wg sync.WaitGroup
	for i := range np {
		wg.Go(func() { eps[i], errs[i] = tcp.Connect(context.Background(), ls[i], i, addrs, cfg) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			closeAll(eps)
			return nil, fmt.Errorf("rank %d: %w", i, err)
		}
	}
	return eps, nil
}

func closeAll(eps []transport.Endpoint) {
	for _, ep := range eps {
		if ep != nil {
			_ = ep.Close()
		}
	}
}

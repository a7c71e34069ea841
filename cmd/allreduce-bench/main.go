// Command allreduce-bench measures collectives.AllReduce between ranks that
// run as goroutines of this one process, over loopback TCP (default) or
// in-process channels, and prints nccl-tests style lines:
//
//	size (B), count (elements), type, redop, algorithm, time (us),
//	algbw = size/time and busbw = algbw·2(p-1)/p (GB/s), #wrong
//
// Example: allreduce-bench -np 2 -min 8 -max 256M -algo auto
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hccl-go/hccl-go/collectives"
	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport"
)

type config struct {
	np, streams, iters, warmup int
	minBytes, maxBytes, factor int
	transport, dtype, algo     string
	chunk                      int
	check                      bool
	budget                     time.Duration
}

func main() {
	var c config
	var minS, maxS string
	flag.IntVar(&c.np, "np", 2, "number of ranks (goroutines)")
	flag.StringVar(&c.transport, "transport", "tcp", "tcp (loopback) or inproc")
	flag.IntVar(&c.streams, "streams", 1, "TCP connections per peer")
	flag.StringVar(&minS, "min", "8", "smallest size in bytes (K, M, G suffixes)")
	flag.StringVar(&maxS, "max", "64M", "largest size in bytes")
	flag.IntVar(&c.factor, "f", 2, "size multiplication factor")
	flag.IntVar(&c.iters, "n", 0, "timed iterations per size (0: enough for -budget)")
	flag.IntVar(&c.warmup, "w", 3, "warm-up iterations per size")
	flag.DurationVar(&c.budget, "budget", 300*time.Millisecond, "time to spend per size when -n is 0")
	flag.StringVar(&c.dtype, "dtype", "float32", "element type")
	flag.StringVar(&c.algo, "algo", "auto", "auto, ring, rd or hd")
	flag.IntVar(&c.chunk, "chunk", 0, "pipelining chunk in bytes (0: default)")
	flag.BoolVar(&c.check, "check", true, "verify the results (#wrong column)")
	flag.Parse()
	var err error
	if c.minBytes, err = parseSize(minS); err == nil {
		c.maxBytes, err = parseSize(maxS)
	}
	if err == nil {
		err = run(c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "allreduce-bench:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	dt, ok := dtypeByName(c.dtype)
	if !ok || c.factor < 2 || c.np < 1 {
		return errors.New("bad -dtype, -f or -np")
	}
	eps, err := connect(c.transport, c.np, c.streams)
	if err != nil {
		return err
	}
	defer closeAll(eps)
	algo := collectives.Algorithm(c.algo)
	if c.algo == "auto" {
		algo = collectives.Auto
	}
	o := collectives.Options{Algo: algo, ChunkBytes: c.chunk}
	chunk := o.ChunkBytes
	if chunk == 0 {
		chunk = collectives.DefaultChunkBytes
	}
	fmt.Printf("# all_reduce, %d ranks over %s, %s sum, chunk %d B, busbw = algbw*2(p-1)/p\n", c.np, c.transport, dt, chunk)
	fmt.Printf("# %10s %12s %8s %6s %6s %10s %8s %8s %7s\n", "size(B)", "count", "type", "redop", "algo", "time(us)", "algbw", "busbw", "#wrong")
	b := &bench{eps: eps, dt: dt, o: o}
	es := dt.Size()
	for size := max(c.minBytes/es*es, es); size <= c.maxBytes; size *= c.factor {
		res, err := b.measure(size, c)
		if err != nil {
			return fmt.Errorf("size %d: %w", size, err)
		}
		name := string(algo)
		if algo == collectives.Auto {
			name = string(collectives.ChooseAllReduce(c.np, size))
		}
		algbw := float64(size) / res.perIter.Seconds() / 1e9
		busbw := algbw * 2 * float64(c.np-1) / float64(c.np)
		fmt.Printf("  %10d %12d %8s %6s %6s %10.1f %8.3f %8.3f %7d\n", size, size/es, dt, "sum", name,
			float64(res.perIter.Nanoseconds())/1e3, algbw, busbw, res.wrong)
	}
	return nil
}

type bench struct {
	eps []transport.Endpoint
	dt  reduce.DType
	o   collectives.Options
	tag transport.Tag // next tag: every call gets its own, as a communicator's sequence number
}

type result struct {
	perIter time.Duration
	wrong   int
}

// measure runs warm-up and timed iterations at one size. The time of an
// iteration is the slowest rank's.
func (b *bench) measure(size int, c config) (result, error) {
	np := len(b.eps)
	sends, recvs := make([][]byte, np), make([][]byte, np)
	for r := range np {
		sends[r] = fill(b.dt, size, float64(r+1))
		recvs[r] = make([]byte, size)
	}
	if _, err := b.iterate(sends, recvs, c.warmup); err != nil {
		return result{}, err
	}
	iters := c.iters
	if iters <= 0 { // calibrate on one iteration
		one, err := b.iterate(sends, recvs, 1)
		if err != nil {
			return result{}, err
		}
		iters = int(min(max(c.budget/max(one, time.Microsecond), 5), 2000))
	}
	total, err := b.iterate(sends, recvs, iters)
	if err != nil {
		return result{}, err
	}
	res := result{perIter: total / time.Duration(iters)}
	if c.check {
		want := fill(b.dt, size, float64(np*(np+1)/2))
		for r := range np {
			res.wrong += countWrong(want, recvs[r], b.dt.Size())
		}
	}
	return res, nil
}

// iterate runs iters all_reduces on every rank and returns the slowest
// rank's elapsed time.
func (b *bench) iterate(sends, recvs [][]byte, iters int) (time.Duration, error) {
	np := len(b.eps)
	elapsed := make([]time.Duration, np)
	errs := make([]error, np)
	first := b.tag
	b.tag += transport.Tag(iters)
	var wg sync.WaitGroup
	for r, ep := range b.eps {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			start := time.Now()
			for i := range iters {
				if err := collectives.AllReduce(ctx, ep, first+transport.Tag(i), sends[r], recvs[r], b.dt, reduce.Sum, b.o); err != nil {
					errs[r] = err
					return
				}
			}
			elapsed[r] = time.Since(start)
		})
	}
	wg.Wait()
	slowest := time.Duration(0)
	for r := range np {
		if errs[r] != nil {
			return 0, errs[r]
		}
		slowest = max(slowest, elapsed[r])
	}
	return slowest, nil
}

// fill returns a buffer of size bytes whose elements all hold v, small
// enough to be exact in every type: rank r contributes r+1, so the sum over
// np ranks is np(np+1)/2 (1 for bool, where sum is or).
func fill(dt reduce.DType, size int, v float64) []byte {
	e := encode(dt, v)
	buf := make([]byte, size)
	for i := 0; i < size; i += len(e) {
		copy(buf[i:], e)
	}
	return buf
}

func encode(dt reduce.DType, v float64) []byte {
	out := make([]byte, dt.Size())
	switch dt {
	case reduce.Float64:
		binary.NativeEndian.PutUint64(out, math.Float64bits(v))
	case reduce.Float32, reduce.Float16, reduce.BFloat16:
		var f [4]byte
		binary.NativeEndian.PutUint32(f[:], math.Float32bits(float32(v)))
		switch dt {
		case reduce.Float16:
			reduce.Float32ToFloat16(out, f[:])
		case reduce.BFloat16:
			reduce.Float32ToBFloat16(out, f[:])
		default:
			copy(out, f[:])
		}
	case reduce.Bool:
		out[0] = 1
	default: // integers, little-endian like the machines this runs on
		x := uint64(int64(v))
		for i := range out {
			out[i] = byte(x >> (8 * i))
		}
	}
	return out
}

// countWrong counts the elements of got that differ from want.
func countWrong(want, got []byte, es int) int {
	wrong := 0
	for i := 0; i+es <= len(got); i += es {
		if string(want[i:i+es]) != string(got[i:i+es]) {
			wrong++
		}
	}
	return wrong
}

func dtypeByName(name string) (reduce.DType, bool) {
	for _, dt := range reduce.AllDTypes {
		if dt.String() == name {
			return dt, true
		}
	}
	return 0, false
}

// parseSize reads a byte count with an optional K, M or G suffix.
func parseSize(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

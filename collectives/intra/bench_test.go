package intra

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/arena"
)

// Benchmarks run 2 ranks, as two processes (the test binary re-executed as
// rank 1, see TestMain) or as two goroutines locked to OS threads ("Goroutines"
// variants). Each reports the median time per op over batches (robust on a
// shared, noisy host) and busbw by the nccl-tests definition.

// benchSizes are the payload sizes of the benchmarks, in bytes.
var benchSizes = []int{8, 64 << 10, 1 << 20, 16 << 20, 128 << 20, 512 << 20}

// benchCase is one benchmarked collective at one size n (nccl-tests'
// "size": the all_reduce buffer, the all_gather output...).
type benchCase struct {
	sendLen, recvLen int
	busFactor        float64 // busbw = algbw * busFactor at p = 2
	call             benchCall
}

type benchCall func(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte) error

func newBenchCase(op string, n int, t tuning) (benchCase, error) {
	const p = 2
	switch op {
	case "allreduce":
		// One single-copy state per case: a case runs on one arena.
		sc := NewSingleCopy(os.Getenv(singleCopyEnv) != "0")
		return benchCase{n, n, 1, func(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte) error {
			return allReduce(ctx, a, sc, seq, send, recv, reduce.Float32, reduce.Sum, 0, t)
		}}, nil
	case "allgather":
		return benchCase{n / p, n, 0.5, func(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte) error {
			return allGather(ctx, a, seq, send, recv, t)
		}}, nil
	case "reducescatter":
		return benchCase{n, n / p, 0.5, func(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte) error {
			return reduceScatter(ctx, a, seq, send, recv, reduce.Float32, reduce.Sum, 0, t)
		}}, nil
	case "broadcast":
		return benchCase{n, n, 1, func(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte) error {
			return broadcast(ctx, a, seq, send, recv, 0, t)
		}}, nil
	case "alltoall":
		return benchCase{n, n, 0.5, func(ctx context.Context, a *arena.Arena, seq uint64, send, recv []byte) error {
			c := []int{n / p, n / p}
			d := []int{0, n / p}
			x := exchange{send: send, sendCounts: c, sendDispls: d, recv: recv, recvCounts: c, recvDispls: d}
			return x.run(ctx, a, seq, t)
		}}, nil
	}
	return benchCase{}, fmt.Errorf("unknown benchmark op %q", op)
}

// benchTunings is the default tuning, or those in $HCCL_GO_INTRA_BENCH_TUNING
// ("oneShotMax,oneShotChunk,sliceBytes,copyBytes[,singleCopyMin,singleCopyMax,singleCopySlice[,pipelineSlice]]",
// several separated by ";"), for sweeping thresholds. With several, the benchmark alternates
// them op by op, so that the load of a shared host weighs on all alike,
// and prints each one's figures.
func benchTunings() ([]tuning, error) {
	s := os.Getenv(tuningEnv)
	if s == "" {
		return []tuning{defaultTuning()}, nil
	}
	var ts []tuning
	for _, f := range strings.Split(s, ";") {
		t := defaultTuning()
		fields := []*int{&t.oneShotMax, &t.oneShotChunk, &t.sliceBytes, &t.copyBytes, &t.singleCopyMin, &t.singleCopyMax, &t.singleCopySlice, &t.pipelineSlice}
		parts := strings.Split(f, ",")
		if len(parts) != 4 && len(parts) != len(fields)-1 && len(parts) != len(fields) {
			return nil, fmt.Errorf("%s %q: want 4, %d or %d numbers", tuningEnv, f, len(fields)-1, len(fields))
		}
		if len(parts) < len(fields) {
			t.pipelineSlice = 0 // the pipeline takes sliceBytes, as given
		}
		for i, part := range parts {
			v, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil {
				return nil, fmt.Errorf("%s %q: %w", tuningEnv, f, err)
			}
			*fields[i] = v
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// benchSizesFromEnv is benchSizes, or the sizes listed in
// $HCCL_GO_INTRA_BENCH_SIZES (comma separated bytes).
func benchSizesFromEnv() []int {
	s := os.Getenv(sizesEnv)
	if s == "" {
		return benchSizes
	}
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(f); err == nil {
			sizes = append(sizes, n)
		}
	}
	return sizes
}

// benchCases is op at size n under each tuning of benchTunings.
func benchCases(op string, n int) ([]benchCase, error) {
	ts, err := benchTunings()
	if err != nil {
		return nil, err
	}
	bcs := make([]benchCase, len(ts))
	for i, t := range ts {
		if bcs[i], err = newBenchCase(op, n, t); err != nil {
			return nil, err
		}
	}
	return bcs, nil
}

// benchLoop runs iters ops after a warm-up and a barrier, timing each op
// on its own, and returns the median and the best. With several cases
// (tunings of one op) it runs iters of each, cycling through them op by op, and prints each
// one's 10th percentile and median on rank 0; the figures returned are the
// first case's.
func benchLoop(ctx context.Context, a *arena.Arena, bcs []benchCase, n, iters int) (med, best time.Duration, err error) {
	bc := bcs[0]
	send, recv := make([]byte, bc.sendLen), make([]byte, bc.recvLen)
	if os.Getenv("INPLACE") != "" {
		recv = send
	}
	for i := range send {
		send[i] = byte(i)
	}
	seq := uint64(0)
	step := func(c benchCase) error {
		seq++
		return c.call(ctx, a, seq, send, recv)
	}
	for range 2 + min(50, (64<<20)/max(n, 1)) {
		for _, c := range bcs {
			if err := step(c); err != nil {
				return 0, 0, err
			}
		}
	}
	seq++
	if err := Barrier(ctx, a, seq); err != nil {
		return 0, 0, err
	}
	// Each op is timed on its own: on a shared host the median of single
	// ops ignores the time slices lost to other processes.
	per := make([][]time.Duration, len(bcs))
	for i := range iters * len(bcs) {
		c := i % len(bcs)
		t0 := time.Now()
		if err := step(bcs[c]); err != nil {
			return 0, 0, err
		}
		per[c] = append(per[c], time.Since(t0))
	}
	for c := range per {
		slices.Sort(per[c])
	}
	if len(bcs) > 1 && a.Index() == 0 {
		for c, d := range per {
			fmt.Fprintf(os.Stderr, "tuning %d n %d: p10 %v p50 %v\n", c, n, d[len(d)/10], d[len(d)/2])
		}
	}
	return per[0][len(per[0])/2], per[0][0], nil
}

// report turns the median and best time of one op into the benchmark's
// metrics.
func report(b *testing.B, bc benchCase, n int, med, best time.Duration) {
	b.ReportMetric(float64(med.Nanoseconds())/1e3, "us/op")
	b.ReportMetric(float64(n)/med.Seconds()/1e9*bc.busFactor, "busGB/s")
	b.ReportMetric(float64(n)/best.Seconds()/1e9*bc.busFactor, "best-busGB/s")
}

// Environment of the helper process that plays rank 1.
const (
	helperEnv = "HCCL_GO_INTRA_TEST_HELPER"
	jobEnv    = "HCCL_GO_INTRA_TEST_JOB"
	dirEnv    = "HCCL_GO_INTRA_TEST_DIR"
	opEnv     = "HCCL_GO_INTRA_TEST_OP"
	sizeEnv   = "HCCL_GO_INTRA_TEST_SIZE"
	itersEnv  = "HCCL_GO_INTRA_TEST_ITERS"
	tuningEnv = "HCCL_GO_INTRA_BENCH_TUNING"
	spinEnv   = "HCCL_GO_INTRA_BENCH_SPIN" // arena.Config.SpinTime, e.g. "5us"
	sizesEnv  = "HCCL_GO_INTRA_BENCH_SIZES"
	// singleCopyEnv "0" makes the all_reduce benchmark unwilling to use
	// single-copy (the pipeline then runs at every size).
	singleCopyEnv = "HCCL_GO_INTRA_BENCH_SINGLECOPY"
)

// helperBench is rank 1 of a two-process benchmark.
func helperBench(ctx context.Context, a *arena.Arena) error {
	n, err := strconv.Atoi(os.Getenv(sizeEnv))
	if err != nil {
		return err
	}
	iters, err := strconv.Atoi(os.Getenv(itersEnv))
	if err != nil {
		return err
	}
	bcs, err := benchCases(os.Getenv(opEnv), n)
	if err != nil {
		return err
	}
	_, _, err = benchLoop(ctx, a, bcs, n, iters)
	return err
}

// benchArenaConfig is the default arena configuration in dir, with
// $HCCL_GO_INTRA_BENCH_SPIN as SpinTime when set.
func benchArenaConfig(dir string) arena.Config {
	cfg := arena.Config{Dir: dir}
	if d, err := time.ParseDuration(os.Getenv(spinEnv)); err == nil {
		cfg.SpinTime = d
	}
	return cfg
}

// startHelper re-executes the test binary as local rank 1 of a 2-rank
// arena in role, with extra environment.
func startHelper(t testing.TB, role, job, dir string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+role, jobEnv+"="+job, dirEnv+"="+dir)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	return cmd
}

func benchTwoProcesses(b *testing.B, op string) {
	for _, n := range benchSizesFromEnv() {
		b.Run(sizeName(n), func(b *testing.B) {
			bcs, err := benchCases(op, n)
			require.NoError(b, err)
			bc := bcs[0]
			dir := shmDir(b)
			job := fmt.Sprintf("bench-%d-%d", os.Getpid(), time.Now().UnixNano())
			iters := b.N
			cmd := startHelper(b, "bench", job, dir, opEnv+"="+op, sizeEnv+"="+strconv.Itoa(n), itersEnv+"="+strconv.Itoa(iters))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			a, err := arena.Connect(ctx, 0, []int{0, 1}, job, benchArenaConfig(dir))
			require.NoError(b, err)
			defer a.Close()
			b.ResetTimer()
			med, best, err := benchLoop(ctx, a, bcs, n, iters)
			b.StopTimer()
			require.NoError(b, err)
			require.NoError(b, cmd.Wait())
			report(b, bc, n, med, best)
		})
	}
}

func benchGoroutines(b *testing.B, op string) {
	for _, n := range benchSizesFromEnv() {
		b.Run(sizeName(n), func(b *testing.B) {
			bcs, err := benchCases(op, n)
			require.NoError(b, err)
			bc := bcs[0]
			w := newWorld(b, 2, benchArenaConfig(""))
			var wg sync.WaitGroup
			meds, bests, errs := make([]time.Duration, 2), make([]time.Duration, 2), make([]error, 2)
			b.ResetTimer()
			for r, a := range w.arenas {
				wg.Go(func() {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					meds[r], bests[r], errs[r] = benchLoop(context.Background(), a, bcs, n, b.N)
				})
			}
			wg.Wait()
			b.StopTimer()
			require.NoError(b, errs[0])
			require.NoError(b, errs[1])
			report(b, bc, n, meds[0], bests[0])
		})
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

func BenchmarkAllReduce(b *testing.B)           { benchTwoProcesses(b, "allreduce") }
func BenchmarkAllGather(b *testing.B)           { benchTwoProcesses(b, "allgather") }
func BenchmarkReduceScatter(b *testing.B)       { benchTwoProcesses(b, "reducescatter") }
func BenchmarkBroadcast(b *testing.B)           { benchTwoProcesses(b, "broadcast") }
func BenchmarkAllToAll(b *testing.B)            { benchTwoProcesses(b, "alltoall") }
func BenchmarkAllReduceGoroutines(b *testing.B) { benchGoroutines(b, "allreduce") }

// BenchmarkCopy is the memory baseline: one core copying n bytes from one
// buffer to another (reported as bytes copied per second; reads+writes are
// twice that).
func BenchmarkCopy(b *testing.B) {
	for _, n := range benchSizesFromEnv() {
		b.Run(sizeName(n), func(b *testing.B) {
			src, dst := make([]byte, n), make([]byte, n)
			for i := range src {
				src[i] = byte(i)
			}
			copy(dst, src)
			per := make([]time.Duration, b.N)
			b.ResetTimer()
			for i := range per {
				t0 := time.Now()
				copy(dst, src)
				per[i] = time.Since(t0)
			}
			b.StopTimer()
			slices.Sort(per)
			med := per[len(per)/2]
			b.ReportMetric(float64(med.Nanoseconds())/1e3, "us/op")
			b.ReportMetric(float64(n)/med.Seconds()/1e9, "GB/s")
		})
	}
}

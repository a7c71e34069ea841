// Package netns_test is the multi-host testbed of the topology work: hosts
// emulated with network namespaces on this machine, links shaped with tc,
// ranks run as processes of this test binary inside the namespaces (see
// README.md for what it shows and how to run the full measurements).
package netns_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if s := os.Getenv(rankEnv); s != "" {
		var spec rankSpec
		if err := json.Unmarshal([]byte(s), &spec); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", rankEnv, err)
			os.Exit(2)
		}
		if err := rankMain(spec); err != nil {
			fmt.Fprintf(os.Stderr, "rank %d: %v\n", spec.Rank, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// placement is where a rank runs: its namespace, extra environment, the
// host it reaches the rendezvous store at (StoreHost, as MASTER_ADDR) and,
// to emulate a wrong address, a host to publish instead of its listener's
// (Advertise).
type placement struct {
	NS        string
	Env       []string
	StoreHost string
	Advertise string
}

// outcome is how one rank process ended.
type outcome struct {
	Err     error // nil: exited 0
	Log     string
	Elapsed time.Duration
}

// run starts one rank process per placement through the variants and
// waits for all of them (at most timeout; then they are killed).
func run(t *testing.T, b *bed, dir string, places []placement, variants []variant, timeout time.Duration) []outcome {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	out := make([]outcome, len(places))
	var wg sync.WaitGroup
	for r, pl := range places {
		spec, err := json.Marshal(rankSpec{Dir: dir, Rank: r, Size: len(places), StoreHost: pl.StoreHost, Advertise: pl.Advertise,
			Secret: b.prefix, Variants: variants, Deadline: deadline.Add(-time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		logPath := filepath.Join(dir, fmt.Sprintf("rank%d.log", r))
		logf, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", b.ns(pl.NS), exe, "-test.run=^$")
		cmd.Env = append(append(os.Environ(), rankEnv+"="+string(spec)), pl.Env...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.WaitDelay = 5 * time.Second
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		wg.Go(func() {
			out[r].Err = cmd.Wait()
			out[r].Elapsed = time.Since(start)
			_ = logf.Close()
			out[r].Log = tail(logPath, 3000)
		})
	}
	wg.Wait()
	return out
}

// launch runs the ranks through the variants and returns each variant's
// results by rank. It fails the test, with the ranks' logs, when a rank
// fails or the timeout passes.
func launch(t *testing.T, b *bed, dir string, places []placement, variants []variant, timeout time.Duration) map[string][]rankResult {
	t.Helper()
	failed := false
	for r, o := range run(t, b, dir, places, variants, timeout) {
		if o.Err != nil {
			failed = true
			t.Errorf("rank %d: %v\n%s", r, o.Err, o.Log)
		}
	}
	if failed {
		t.FailNow()
	}
	out := map[string][]rankResult{}
	for _, v := range variants {
		for r := range places {
			data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("result-%s-%d.json", v.Name, r)))
			if err != nil {
				t.Fatal(err)
			}
			var res rankResult
			if err := json.Unmarshal(data, &res); err != nil {
				t.Fatal(err)
			}
			out[v.Name] = append(out[v.Name], res)
		}
	}
	return out
}

// tail is the end of a file, for failure messages.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

// timed is a variant's measured time for size n: per iteration the
// slowest rank, then the median over iterations.
func timed(t *testing.T, res []rankResult, n int) float64 {
	t.Helper()
	var per []float64
	for _, r := range res {
		for _, run := range r.Runs {
			if run.Bytes != n {
				continue
			}
			for i, d := range run.Times {
				if i >= len(per) {
					per = append(per, 0)
				}
				per[i] = max(per[i], d)
			}
		}
	}
	if len(per) == 0 {
		t.Fatalf("variant %s has no run of %d bytes", res[0].Variant, n)
	}
	return median(per)
}

// runOf is rank 0's record of size n.
func runOf(t *testing.T, res []rankResult, n int) sizeRun {
	t.Helper()
	for _, run := range res[0].Runs {
		if run.Bytes == n {
			return run
		}
	}
	t.Fatalf("variant %s has no run of %d bytes", res[0].Variant, n)
	return sizeRun{}
}

// full reports whether the full measurements were asked for
// (HCCL_GO_NETNS_FULL=1); the default is the small CI variant.
func full() bool { return os.Getenv("HCCL_GO_NETNS_FULL") == "1" }

func mib(n int) string { return fmt.Sprintf("%d MiB", n>>20) }

// table formats rows of cells as an aligned text table.
func table(rows [][]string) string {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], len(c))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		for i, c := range row {
			fmt.Fprintf(&b, "%-*s  ", widths[i], c)
		}
		b.WriteString("\n")
	}
	return b.String()
}

package netns_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Timing on this machine is shared with other work, so the checks that
// rest on timing come in two kinds. Properties (the model chooses the
// hierarchy, probing finds the fast pairs, the chosen algorithm beats the
// flat ring by a margin that holds on a loaded machine) fail the test when
// they fail in every one of maxAttempts measurements. Figures (measured
// against predicted times, tight speed-ups, probing time) are checked only
// in the documented measurement run (HCCL_GO_NETNS_FULL=1) and logged
// otherwise. Checks that do not depend on timing (correct results, the
// same graph and ring on every rank, a dumped file reloading to the same
// ring) must hold on every attempt. Under the race detector every timing
// check is only logged (raceEnabled).
const maxAttempts = 3

// sortedGroups normalises hierarchy groups for comparison.
func sortedGroups(groups [][]int) [][]int {
	out := make([][]int, len(groups))
	for i, g := range groups {
		out[i] = slices.Sorted(slices.Values(g))
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// checks collects the failed timing checks of one attempt.
type checks struct {
	properties, figures []string
}

// property records a property that failed (see the top of this file).
func (c *checks) property(ok bool, format string, args ...any) {
	if !ok {
		c.properties = append(c.properties, fmt.Sprintf(format, args...))
	}
}

// figure records a figure outside its bounds.
func (c *checks) figure(ok bool, format string, args ...any) {
	if !ok {
		c.figures = append(c.figures, fmt.Sprintf(format, args...))
	}
}

// verdicts are the failed checks that fail the test in this run: every
// one in the full measurement run, the properties otherwise, none under
// the race detector.
func (c checks) verdicts() []string {
	switch {
	case raceEnabled:
		return nil
	case full():
		return append(slices.Clip(c.properties), c.figures...)
	}
	return c.properties
}

// attempt runs measure until the timing checks that count in this run
// pass or maxAttempts runs have failed them; the rest are logged.
func attempt(t *testing.T, measure func(t *testing.T, dir string) checks) {
	t.Helper()
	for i := 1; ; i++ {
		dir, err := os.MkdirTemp(t.TempDir(), fmt.Sprint("attempt", i))
		if err != nil {
			t.Fatal(err)
		}
		c := measure(t, dir)
		if t.Failed() {
			return // a check that does not depend on timing failed
		}
		failed := c.verdicts()
		if len(failed) == 0 {
			if all := append(slices.Clip(c.properties), c.figures...); len(all) > 0 {
				t.Logf("timing checks only logged in this run (figures count with HCCL_GO_NETNS_FULL=1, nothing under -race):\n  %s", strings.Join(all, "\n  "))
			}
			return
		}
		if i == maxAttempts {
			t.Errorf("timing checks failed in %d attempts; the last:\n  %s", i, strings.Join(failed, "\n  "))
			return
		}
		t.Logf("attempt %d: timing checks failed (the machine is shared), measuring again:\n  %s", i, strings.Join(failed, "\n  "))
	}
}

// TestCaseA: two hosts of two ranks, the link between them shaped to
// 1 Gbit/s each way. Ranks on one host share a shared-memory arena, across
// hosts TCP; discovery finds the two hosts; the hierarchical all_reduce
// (intra-host phases in the arena) beats a flat ring in rank order (which
// crosses between the hosts 1.5 times as many bytes) and in the order
// 0,2,1,3 (every hop crosses), by the margins the cost model predicts, and
// is at least as fast as the hierarchical all_reduce whose intra-host
// phases run as messages over the shm transport.
func TestCaseA(t *testing.T) {
	b := newBed(t)
	b.addHost("ha")
	b.addHost("hb")
	b.link("ha", "va", "hb", "vb", "1gbit", "256kb")
	b.assign("ha", "va", "10.199.1.1/24")
	b.assign("hb", "vb", "10.199.1.2/24")
	places := []placement{
		{NS: "ha", Env: []string{"HCCL_GO_HOST_ID=ha", "HCCL_GO_SOCKET_IFNAME=va"}},
		{NS: "ha", Env: []string{"HCCL_GO_HOST_ID=ha", "HCCL_GO_SOCKET_IFNAME=va"}},
		{NS: "hb", Env: []string{"HCCL_GO_HOST_ID=hb", "HCCL_GO_SOCKET_IFNAME=vb"}},
		{NS: "hb", Env: []string{"HCCL_GO_HOST_ID=hb", "HCCL_GO_SOCKET_IFNAME=vb"}},
	}
	// Below ~16 MiB the intra-host phases, bound by the CPU on a loaded
	// 2-core machine, make timings noisy (see README.md).
	sizes, iters, timeout := []int{16 << 20}, 3, 2*time.Minute
	// The flat ring in rank order crosses between the hosts 1.5 times the
	// bytes of the hierarchy, in the order 0,2,1,3 3 times: the properties'
	// margins (propRank, prop0213) hold on a loaded machine (1.5 and 2.9
	// measured unloaded); the figures' are the model's.
	propRank, prop0213 := 1.1, 1.5
	minRank, min0213, tolerance, hierTolerance := 1.05, 1.5, 0.35, 0.35
	if raceEnabled {
		sizes, iters = []int{1 << 20}, 1
	}
	if full() {
		sizes, iters, timeout = []int{16 << 20, 32 << 20, 64 << 20}, 3, 10*time.Minute
		minRank, min0213, tolerance, hierTolerance = 1.3, 1.8, 0.25, 0.2
	}
	big := sizes[len(sizes)-1]
	attempt(t, func(t *testing.T, dir string) checks {
		dump := filepath.Join(dir, "case-a.json")
		variants := []variant{
			{Name: "auto", Options: "debug=INFO;topo_dump_file=" + dump, Sizes: sizes, Iters: iters},
			{Name: "hier", Options: "algo=hier;topo_file=" + dump, Sizes: sizes, Iters: iters},
			{Name: "ring-rank", Options: "algo=ring;topo_ring=rank;topo_file=" + dump, Sizes: sizes, Iters: iters},
			{Name: "ring-0213", Options: "algo=ring;topo_ring=0,2,1,3;topo_file=" + dump, Sizes: []int{big}, Iters: iters},
			{Name: "hier-messages", Options: "algo=hier;shm_collectives=0;topo_file=" + dump, Sizes: sizes, Iters: iters},
			{Name: "reload", Options: "topo_file=" + dump},
		}
		res := launch(t, b, dir, places, variants, timeout)
		t.Logf("rank 0's log:\n%s", tail(filepath.Join(dir, "rank0.log"), 4000))

		auto := res["auto"]
		for r, rr := range auto {
			assert.Equal(t, "probe", rr.Source, "rank %d", r)
			assert.Equal(t, 2, rr.Hosts, "rank %d: discovery finds two hosts", r)
			assert.Equal(t, [][]int{{0, 1}, {2, 3}}, sortedGroups(rr.Groups), "rank %d", r)
			assert.Equal(t, auto[0].Ring, rr.Ring, "rank %d's ring", r)
		}
		assert.Equal(t, []string{"self", "shm+arena", "tcp", "tcp"}, auto[0].Transports)
		assert.Equal(t, []string{"tcp", "tcp", "shm+arena", "self"}, auto[3].Transports)
		assert.Equal(t, []string{"self", "shm", "tcp", "tcp"}, res["hier-messages"][0].Transports)
		assert.Equal(t, auto[0].Ring, res["reload"][0].Ring, "the dumped topology reloads to the same ring")

		rows := [][]string{{"size", "variant", "algo", "measured", "predicted", "measured/predicted"}}
		for _, n := range sizes {
			for _, v := range []string{"auto", "hier", "hier-messages", "ring-rank", "ring-0213"} {
				if v == "ring-0213" && n != big {
					continue
				}
				run := runOf(t, res[v], n)
				m := timed(t, res[v], n)
				pred := run.Pred[run.Algo]
				rows = append(rows, []string{mib(n), v, run.Algo, fmt.Sprintf("%.3f s", m), fmt.Sprintf("%.3f s", pred), fmt.Sprintf("%.2f", m/pred)})
			}
		}
		hier, ringRank, ring0213 := timed(t, res["hier"], big), timed(t, res["ring-rank"], big), timed(t, res["ring-0213"], big)
		hierMessages := timed(t, res["hier-messages"], big)
		t.Logf("case A, all_reduce float32, median of %d (slowest rank per iteration):\n%s\nat %s: ring 0,1,2,3 / hier = %.2f, ring 0,2,1,3 / hier = %.2f, hier with shm messages / hier with the arena = %.2f",
			iters, table(rows), mib(big), ringRank/hier, ring0213/hier, hierMessages/hier)

		var c checks
		c.property(runOf(t, auto, big).Algo == "hier", "the model chooses %s, not hier, for %s", runOf(t, auto, big).Algo, mib(big))
		c.property(ringRank/hier >= propRank, "ring 0,1,2,3 / hier = %.2f < %.2f", ringRank/hier, propRank)
		c.property(ring0213/hier >= prop0213, "ring 0,2,1,3 / hier = %.2f < %.2f", ring0213/hier, prop0213)
		c.figure(ringRank/hier >= minRank, "ring 0,1,2,3 / hier = %.2f < %.2f", ringRank/hier, minRank)
		c.figure(ring0213/hier >= min0213, "ring 0,2,1,3 / hier = %.2f < %.2f", ring0213/hier, min0213)
		c.figure(hierMessages/hier >= 1, "hier with shm messages / hier with the arena = %.2f < 1", hierMessages/hier)
		for _, n := range sizes {
			for _, v := range []string{"hier", "ring-rank"} {
				run := runOf(t, res[v], n)
				ratio := timed(t, res[v], n) / run.Pred[run.Algo]
				tol := tolerance
				if v == "hier" && n == big {
					tol = hierTolerance
				}
				c.figure(ratio >= 1-tol && ratio <= 1+tol, "%s at %s: measured/predicted = %.2f, outside 1±%.2f", v, mib(n), ratio, tol)
			}
		}
		return c
	})
}

// TestCaseB: eight ranks, one per namespace, with fast links (300 Mbit/s)
// in the pairs (0,4), (1,5), (2,6), (3,7) and links 3 times slower between
// all other pairs, each pair its own veth shaped both ways. Probing must
// recover the pairs in under a second; every ring of 8 crosses slow links,
// so the win comes from the algorithm the model chooses.
func TestCaseB(t *testing.T) {
	b := newBed(t)
	const n = 8
	fast := func(i, j int) bool { return j-i == 4 || i-j == 4 }
	addr := func(i int) string { return fmt.Sprintf("10.199.0.%d", i+1) }
	for i := range n {
		h := fmt.Sprint("n", i)
		b.addHost(h)
		b.addAddress(h, "d0", addr(i)+"/32")
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			rate, burst := "100mbit", "64kb"
			if fast(i, j) {
				rate, burst = "300mbit", "128kb"
			}
			hi, hj := fmt.Sprint("n", i), fmt.Sprint("n", j)
			b.link(hi, fmt.Sprint("p", j), hj, fmt.Sprint("p", i), rate, burst)
			b.route(hi, addr(j), fmt.Sprint("p", j), addr(i))
			b.route(hj, addr(i), fmt.Sprint("p", i), addr(j))
		}
	}
	places := make([]placement, n)
	for i := range places {
		places[i] = placement{NS: fmt.Sprint("n", i), Env: []string{fmt.Sprintf("HCCL_GO_HOST_ID=n%d", i), "HCCL_GO_SOCKET_IFNAME=d0"}}
	}
	// want: the chosen algorithm's margin over the flat ring in rank order,
	// one that holds on a loaded machine (2.7 measured unloaded).
	size, iters, timeout, want := 4<<20, 3, 2*time.Minute, 1.3
	if raceEnabled {
		size, iters = 1<<20, 1
	}
	if full() {
		size, iters, timeout, want = 64<<20, 3, 10*time.Minute, 1.4
	}
	attempt(t, func(t *testing.T, dir string) checks {
		dump := filepath.Join(dir, "case-b.json")
		variants := []variant{
			{Name: "auto", Options: "debug=INFO;topo_dump_file=" + dump, Sizes: []int{size}, Iters: iters},
			{Name: "file", Options: "topo_file=" + dump},
			{Name: "ring-rank", Options: "algo=ring;topo_ring=rank;topo_file=" + dump, Sizes: []int{size}, Iters: iters},
		}
		if full() {
			variants = append(variants,
				variant{Name: "hier", Options: "algo=hier;topo_file=" + dump, Sizes: []int{size}, Iters: iters},
				variant{Name: "hd", Options: "algo=hd;topo_file=" + dump, Sizes: []int{size}, Iters: iters},
				variant{Name: "ring-topo", Options: "algo=ring;topo_file=" + dump, Sizes: []int{size}, Iters: iters},
			)
		}
		res := launch(t, b, dir, places, variants, timeout)
		t.Logf("rank 0's log:\n%s", tail(filepath.Join(dir, "rank0.log"), 4000))

		auto := res["auto"]
		var c checks
		probeMs := 0.0
		for r, rr := range auto {
			assert.Equal(t, "probe", rr.Source, "rank %d", r)
			assert.Equal(t, auto[0].Ring, rr.Ring, "rank %d's ring", r)
			assert.Equal(t, auto[0].Groups, rr.Groups, "rank %d's groups", r)
			probeMs = max(probeMs, rr.ProbeMs)
		}
		assert.Equal(t, auto[0].Ring, res["file"][0].Ring, "the dumped topology reloads to the same ring")
		c.figure(probeMs < 1000, "probing took %.0f ms", probeMs)
		c.property(slices.EqualFunc(sortedGroups(auto[0].Groups), [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}}, slices.Equal),
			"probing found groups %v, not the fast pairs", auto[0].Groups)

		chosen := runOf(t, auto, size)
		rows := [][]string{{"variant", "algo", "measured", "predicted", "measured/predicted"}}
		for _, v := range variants {
			if v.Sizes == nil {
				continue
			}
			run := runOf(t, res[v.Name], size)
			m := timed(t, res[v.Name], size)
			rows = append(rows, []string{v.Name, run.Algo, fmt.Sprintf("%.3f s", m), fmt.Sprintf("%.3f s", run.Pred[run.Algo]), fmt.Sprintf("%.2f", m/run.Pred[run.Algo])})
		}
		speedup := timed(t, res["ring-rank"], size) / timed(t, auto, size)
		predicted := runOf(t, res["ring-rank"], size).Pred["ring"] / chosen.Pred[chosen.Algo]
		t.Logf("case B, all_reduce of %s float32, median of %d (slowest rank per iteration); probe %.0f ms; ring %v; groups %v:\n%s\nring 0..7 / %s = %.2f measured, %.2f predicted",
			mib(size), iters, probeMs, auto[0].Ring, auto[0].Groups, table(rows), chosen.Algo, speedup, predicted)
		c.property(chosen.Algo != "ring", "the model chose the flat ring")
		c.property(predicted > 1, "the model predicted its choice %.2f times as slow as the flat ring in rank order", 1/predicted)
		c.property(speedup >= want, "ring 0..7 / %s = %.2f < %.2f", chosen.Algo, speedup, want)
		return c
	})
}

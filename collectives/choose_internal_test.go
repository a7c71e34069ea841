package collectives

import (
	"fmt"
	"testing"
)

// TestAllReduceCrossovers checks that, as the size grows, ChooseAllReduce
// only moves from recursive doubling to halving-doubling to ring, and logs
// where it switches, for ALGORITHMS.md (go test -run Crossovers -v).
func TestAllReduceCrossovers(t *testing.T) {
	rank := map[Algorithm]int{RecursiveDoubling: 0, HalvingDoubling: 1, Ring: 2}
	for _, p := range []int{2, 3, 4, 5, 8, 16, 64, 1024} {
		line, prev := fmt.Sprintf("p=%d:", p), Algorithm("")
		for n := 0; n <= 1<<30; n += max(n/64, 256) {
			a := ChooseAllReduce(p, n)
			if a == prev {
				continue
			}
			if prev != "" && rank[a] < rank[prev] {
				t.Errorf("p=%d: %s after %s at %d bytes", p, a, prev, n)
			}
			line += fmt.Sprintf(" %s from %d B;", a, n)
			prev = a
		}
		t.Log(line)
	}
}

// TestRootedCrossovers: tree for small buffers, chain for large ones (from
// a few chunks), never the other way round; logged for ALGORITHMS.md.
func TestRootedCrossovers(t *testing.T) {
	for _, p := range []int{2, 3, 4, 8, 64} {
		for _, f := range []struct {
			name   string
			choose func(size, nbytes, chunk int) Algorithm
		}{{"broadcast", chooseBroadcast}, {"reduce", chooseReduce}} {
			line, prev := fmt.Sprintf("%s p=%d:", f.name, p), Algorithm("")
			for n := 0; n <= 1<<30; n += max(n/64, 256) {
				a := f.choose(p, n, DefaultChunkBytes)
				if a == prev {
					continue
				}
				if prev == Chain {
					t.Errorf("%s p=%d: %s after chain at %d bytes", f.name, p, a, n)
				}
				line += fmt.Sprintf(" %s from %d B;", a, n)
				prev = a
			}
			t.Log(line)
		}
	}
}

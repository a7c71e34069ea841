package collectives

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hccl-go/hccl-go/collectives/reduce"
	"github.com/hccl-go/hccl-go/transport/inproc"
)

// TestHDScheduleOverlapsSteps checks the pipelined halving-doubling's
// point: a step's first message waits only for the previous step's first
// message, in both phases, on every rank; and each
// message a rank sends is received by its partner with the same length,
// in the same order.
func TestHDScheduleOverlapsSteps(t *testing.T) {
	for _, q := range []int{4, 8, 16} {
		for _, n := range []int{64 * q, 64*q + 7} {
			t.Run(fmt.Sprintf("q%d/n%d", q, n), func(t *testing.T) {
				eps := inproc.NewGroup(q)
				f := newFoldedGroup(q)
				tree := newHDTree(q, n)
				pls := make([]*pipeline, q)
				for v := range q {
					pls[v] = hdSchedule(eps[v], 0, f, v, make([]byte, 4*n), reduce.Float32, reduce.Sum, false, 8)
				}
				for v, pl := range pls {
					prevFirst := 0 // index of the previous step's first receive
					for step := range 2 * tree.steps {
						sends, recvs := itemsOfStep(pl, step)
						require.NotEmpty(t, sends, "rank %d step %d sends nothing", v, step)
						require.NotEmpty(t, recvs, "rank %d step %d receives nothing", v, step)
						if step > 0 {
							assert.LessOrEqual(t, pl.sends[sends[0]].after, prevFirst+1,
								"rank %d: step %d's first send waits for more than step %d's first receive", v, step, step-1)
						}
						peer := pl.sends[sends[0]].peer
						_, theirs := itemsOfStep(pls[peer], step)
						assert.Equal(t, lengths(pl, sends, true), lengths(pls[peer], theirs, false),
							"step %d: rank %d's messages to rank %d", step, v, peer)
						prevFirst = recvs[0]
					}
				}
			})
		}
	}
}

func itemsOfStep(pl *pipeline, step int) (sends, recvs []int) {
	for i, s := range pl.sends {
		if s.step == step {
			sends = append(sends, i)
		}
	}
	for i, r := range pl.recvs {
		if r.step == step {
			recvs = append(recvs, i)
		}
	}
	return sends, recvs
}

func lengths(pl *pipeline, items []int, send bool) []int {
	out := make([]int, len(items))
	for k, i := range items {
		if send {
			out[k] = len(pl.sends[i].buf)
		} else {
			out[k] = len(pl.recvs[i].buf)
		}
	}
	return out
}

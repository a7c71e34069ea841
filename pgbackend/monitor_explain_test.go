package pgbackend

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestExplainWaitNamesTheRanksThatHoldTheOpBack(t *testing.T) {
	op := opDesc{Kind: "allreduce", Seq: 2, Stream: 0}
	issued := func(seq uint64) *ctlMsg { return &ctlMsg{kind: ctlReply, issued: seq} }
	inIt := func() *ctlMsg {
		a := issued(2)
		a.streams[0].started = 2
		return a
	}
	cases := []struct {
		name    string
		answers []*ctlMsg
		want    []string
		notWant []string
	}{
		{
			name:    "one rank has not issued it, a live one missed the query",
			answers: []*ctlMsg{nil, inIt(), issued(1), nil},
			want:    []string{", waiting for ranks [2]", "rank 2 has not issued it (last issued seq 1)", "ranks [0] did not answer", "ranks [1] are in it"},
			notWant: []string{"[0 2]"},
		},
		{
			name:    "nobody explains the wait: the silent ranks are the suspects",
			answers: []*ctlMsg{nil, inIt(), nil, nil},
			want:    []string{", waiting for ranks [0 2]", "ranks [0 2] did not answer"},
		},
		{
			name:    "every rank is in it",
			answers: []*ctlMsg{inIt(), inIt(), inIt(), nil},
			want:    []string{", every rank has joined it", "ranks [0 1 2] are in it"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := explainWait(3, op, tc.answers)
			for _, w := range tc.want {
				assert.Contains(t, got, w)
			}
			for _, w := range tc.notWant {
				assert.NotContains(t, got, w)
			}
		})
	}
}

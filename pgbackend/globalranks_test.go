package pgbackend

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGlobalRanksOption(t *testing.T) {
	cases := []struct {
		opts    string
		want    []int
		wantErr string
	}{
		{"global_ranks=0,2,3", []int{0, 2, 3}, ""},
		{"GLOBAL_RANKS= 4 , 1", []int{4, 1}, ""},
		{"global_ranks=", nil, ""},
		{"global_ranks=0,0", nil, "distinct"},
		{"global_ranks=0,-1", nil, "non-negative"},
		{"global_ranks=a", nil, "want distinct"},
	}
	for _, c := range cases {
		t.Run(c.opts, func(t *testing.T) {
			cfg := DefaultConfig()
			err := cfg.ApplyOptions(c.opts)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, cfg.GlobalRanks)
		})
	}
}

func TestGlobalRanksNote(t *testing.T) {
	assert.Empty(t, globalRanksNote(nil))
	assert.Empty(t, globalRanksNote([]int{0, 1, 2}), "the world needs no mapping")
	assert.Equal(t, " [ranks above are this subgroup's; as global ranks: 0=global 1, 1=global 3]", globalRanksNote([]int{1, 3}))

	c := &Communicator{globalNote: globalRanksNote([]int{1, 3})}
	base := errors.New("allreduce seq 4 (8 bytes) on rank 0 of 2: peer rank 1 is gone")
	err := c.withGlobalRanks(base)
	assert.ErrorIs(t, err, base)
	assert.Equal(t, base.Error()+" [ranks above are this subgroup's; as global ranks: 0=global 1, 1=global 3]", err.Error())
	assert.Same(t, err, c.withGlobalRanks(err), "wrapped once")
	assert.NoError(t, c.withGlobalRanks(nil))
}

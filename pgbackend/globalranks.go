package pgbackend

import (
	"fmt"
	"strconv"
	"strings"
)

// A subgroup's communicator numbers its members 0..size-1, and so do its
// error messages; users think in global ranks. The PyTorch backend passes
// the group's global ranks (option global_ranks=0,2,3) and every op error of
// such a communicator ends with the mapping.

// globalRanksOption is the options-string key; not an environment variable
// (it only makes sense per communicator).
const globalRanksOption = "global_ranks"

// parseGlobalRanks reads "0,2,3": distinct non-negative ranks.
func parseGlobalRanks(v string) ([]int, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	parts := strings.Split(v, ",")
	ranks := make([]int, len(parts))
	seen := make(map[int]bool, len(parts))
	for i, s := range parts {
		r, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || r < 0 || seen[r] {
			return nil, fmt.Errorf("%q: want distinct non-negative ranks separated by commas", v)
		}
		seen[r] = true
		ranks[i] = r
	}
	return ranks, nil
}

// globalRanksNote is the suffix of this communicator's op errors, "" when
// its ranks are the global ones.
func globalRanksNote(ranks []int) string {
	identity := true
	for i, r := range ranks {
		identity = identity && r == i
	}
	if len(ranks) == 0 || identity {
		return ""
	}
	var b strings.Builder
	b.WriteString(" [ranks above are this subgroup's; as global ranks: ")
	for i, r := range ranks {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d=global %d", i, r)
	}
	b.WriteString("]")
	return b.String()
}

// globalRankError adds the subgroup's rank mapping to an op error.
type globalRankError struct {
	err  error
	note string
}

func (e *globalRankError) Error() string { return e.err.Error() + e.note }
func (e *globalRankError) Unwrap() error { return e.err }

// withGlobalRanks wraps err with the communicator's rank mapping (once).
func (c *Communicator) withGlobalRanks(err error) error {
	if err == nil || c.globalNote == "" {
		return err
	}
	if _, done := err.(*globalRankError); done {
		return err
	}
	return &globalRankError{err: err, note: c.globalNote}
}

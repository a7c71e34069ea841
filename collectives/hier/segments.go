package hier

import (
	"slices"

	"github.com/hccl-go/hccl-go/transport"
	"github.com/hccl-go/hccl-go/transport/sub"
)

// Tag spaces (transport/sub) of the inter-host views: the leaders of a
// rooted collective, and one space per segment of the all_reduce, so that
// the segments a rank carries at the same time (with the same tag, the
// op's) never take each other's messages. On an endpoint that is itself a
// view with a space (a split communicator), the views nest, and nested
// spaces are fewer (sub.MaxNestedSpace): the segments then take the
// spaces above the leaders'.
const (
	spaceLeaders        = 16
	spaceSegments       = 4096
	spaceNestedSegments = spaceLeaders + 1
)

// segmentSpaces are the first tag space of the segments' views on ep and
// how many segments (and hosts) a layout may give there.
func segmentSpaces(ep transport.Endpoint) (first, most int) {
	limit := sub.SpaceLimit(ep)
	if limit >= spaceSegments {
		return spaceSegments, limit - spaceSegments + 1
	}
	return spaceNestedSegments, max(limit-spaceNestedSegments+1, 0)
}

// pieceBounds splits n elements among k ranks as k contiguous pieces, the
// first n%k one element longer: piece i is [b[i], b[i+1]).
func pieceBounds(n, k int) []int {
	b := make([]int, k+1)
	for i := range k {
		b[i+1] = b[i] + n/k
		if i < n%k {
			b[i+1]++
		}
	}
	return b
}

// segment is a run of elements [lo, hi) that lies inside one piece of
// every host: its owners (one global rank per host, in host order) reduce
// it across hosts.
type segment struct {
	lo, hi int
	owners []int
	space  int // tag space of its inter-host view
}

// segments cuts n elements at every host's piece boundaries (each host
// splits them among its own ranks) and lists the non-empty runs in order,
// the same on every rank. For hosts of equal size they are the pieces.
func (c *Comm) segments(n int) []segment {
	bounds := make([][]int, len(c.hosts))
	var cuts []int
	for h, hr := range c.hosts {
		bounds[h] = pieceBounds(n, len(hr))
		cuts = append(cuts, bounds[h]...)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	segs := make([]segment, 0, len(cuts))
	for k := 0; k+1 < len(cuts); k++ {
		lo, hi := cuts[k], cuts[k+1]
		owners := make([]int, len(c.hosts))
		for h, hr := range c.hosts {
			// The piece of host h that holds lo: the last bound <= lo.
			i, found := slices.BinarySearch(bounds[h], lo)
			if !found {
				i--
			}
			for i+1 < len(bounds[h]) && bounds[h][i+1] == lo {
				i++ // skip empty pieces that end where lo starts
			}
			owners[h] = hr[i]
		}
		segs = append(segs, segment{lo: lo, hi: hi, owners: owners, space: c.segSpace + len(segs)})
	}
	return segs
}

// maxSegmentCount bounds the segments of any n: every host adds at most
// its size minus one cuts inside the buffer.
func maxSegmentCount(hosts [][]int) int {
	n := 1
	for _, hr := range hosts {
		n += len(hr) - 1
	}
	return n
}

package topo

// Rounds is the round-robin tournament schedule of n ranks (the circle
// method): rounds[r][i] is rank i's partner in round r, or -1 when rank i
// sits the round out. Every pair meets exactly once, in n-1 rounds for
// even n and n rounds (one rank resting in each) for odd n. It depends on
// n only, so every rank derives the same schedule.
func Rounds(n int) [][]int {
	if n < 2 {
		return nil
	}
	m := n + n%2 // with a phantom rank n when n is odd
	rounds := make([][]int, m-1)
	for r := range rounds {
		partner := make([]int, m)
		// Rank m-1 stays put; the others turn around a circle of m-1.
		partner[m-1], partner[r] = r, m-1
		for k := 1; k < m/2; k++ {
			a, b := (r+k)%(m-1), (r-k+m-1)%(m-1)
			partner[a], partner[b] = b, a
		}
		for i, p := range partner {
			if p == n {
				partner[i] = -1
			}
		}
		rounds[r] = partner[:n]
	}
	return rounds
}

// waves splits a round's pairs into waves run one after the other, so that
// no host takes part in two cross-host pairs of one wave: their flows
// would share its NIC and each would measure a fraction of the link.
// Pairs inside a host all go to the first wave. Each pair is (lower,
// higher); pairs and waves come in a fixed order.
func waves(partner []int, hostOf []int) [][][2]int {
	var out [][][2]int
	var busy []map[int]bool // per wave: hosts with a cross-host pair
	for a, b := range partner {
		if b <= a {
			continue // each pair once, from its lower rank; -1: resting
		}
		ha, hb := hostOf[a], hostOf[b]
		w := 0
		if ha != hb {
			for w < len(busy) && (busy[w][ha] || busy[w][hb]) {
				w++
			}
		}
		for len(out) <= w {
			out = append(out, nil)
			busy = append(busy, map[int]bool{})
		}
		out[w] = append(out[w], [2]int{a, b})
		if ha != hb {
			busy[w][ha], busy[w][hb] = true, true
		}
	}
	return out
}

// Package topo knows the shape of a communicator: which ranks share a host
// and a NUMA node, how fast each link is, in which order a ring should visit
// the ranks, and how long each collective algorithm should take. It is pure
// Go, with no cgo and no knowledge of torch, so every part is testable alone.
//
// The pieces, top-down:
//
//   - Graph (graph.go, graph_file.go): ranks with host and NUMA identity and
//     the latency and bandwidth of every pair, saved and loaded as versioned
//     JSON (HCCL_GO_TOPO_FILE, HCCL_GO_TOPO_DUMP_FILE).
//   - Discovery (identity.go, numa.go): this process's host identity and
//     NUMA node; GroupHosts turns per-rank host ids into hosts.
//   - Probing (probe.go, schedule.go, probe_endpoint.go, rows.go): measures
//     every pair in a round-robin tournament within a time budget, over any
//     ping function, and assembles the Graph.
//   - Ring order (ring*.go): the ring that maximises its slowest link, then
//     its total bandwidth, then minimises its summed latency; exact up to 16
//     ranks, greedy + local search beyond. Deterministic.
//   - Cost model (cost*.go, topology.go, groups.go, fit.go): α-β-γ
//     predictions per algorithm and op, with hosts sharing one NIC, and the
//     choice of the fastest algorithm.
//   - Simulator (sim*.go, units.go): the cost model over a synthetic
//     "H hosts × R ranks" cluster or a topology file, for the
//     hccl-go-topo command and the C ABI (SimulateJSON).
package topo

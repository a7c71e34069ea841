// Package hier runs collectives across hosts as compositions of two kinds
// of hop: an intra-host hop among the ranks of the communicator that share
// a host (a Host: the host's shared-memory arena, collectives/intra, or
// messages among a group of ranks that share no arena), and an inter-host
// hop as messages (collectives, over the communicator's endpoint, TCP in
// practice) among ranks on different hosts. Each collective has one
// inter-host exchange; with the arena everything else happens at memory
// speed.
//
//   - AllReduce: reduce-scatter inside each host in the arena, all_reduce
//     of every piece across hosts with every local rank carrying its own
//     piece at the same time, all-gather inside each host in the arena.
//   - AllGather: every rank sends its block straight to one rank of every
//     other host, then each host all-gathers in the arena.
//   - ReduceScatter: each host reduce-scatters in the arena, then every
//     rank sends its host's partial of each remote block straight to that
//     block's rank, which combines the hosts' partials.
//   - Broadcast: root's host leaders pass the buffer across hosts, each
//     leader passes it on in its arena.
//   - Reduce: each host reduces to its leader in the arena, the leaders
//     reduce across hosts to root.
//
// Hosts may hold different numbers of ranks (3+1, 1+1+2): each host
// splits a buffer among its own ranks, so a host with fewer ranks carries
// more of it per rank, and a host of one rank has no arena phase at all.
//
// Results are bitwise identical on every rank that receives them, run
// after run: every element is reduced inside its host in local rank order
// by one rank, and across hosts by an algorithm of package collectives
// whose order depends only on the ranks and sizes (or, for ReduceScatter,
// in host order by the block's own rank).
//
// The arena's discipline holds for every Host: every local rank of a host
// runs the same host operations, with the same sizes and sequence number,
// in the same order, whatever it carries across hosts. A host's ranks agree on
// everything they compute (pieces, leaders, partners) because it depends
// only on the Layout, the sizes and the root, which every rank shares.
//
// ALGORITHMS.md in package collectives lists the bytes each rank moves on
// each kind of hop.
package hier

package topo

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// rowEntryBytes is the size of one link in an encoded row: the latency in
// nanoseconds and the bandwidth's float64 bits, little-endian.
const rowEntryBytes = 16

// EncodeRow encodes a probe row for the exchange between ranks (an
// all-gather of len(row)*16 bytes per rank).
func EncodeRow(row []Link) []byte {
	b := make([]byte, len(row)*rowEntryBytes)
	for i, l := range row {
		binary.LittleEndian.PutUint64(b[i*rowEntryBytes:], uint64(l.Latency))
		binary.LittleEndian.PutUint64(b[i*rowEntryBytes+8:], math.Float64bits(l.Bandwidth))
	}
	return b
}

// DecodeRow decodes a row of n links encoded by EncodeRow.
func DecodeRow(b []byte, n int) ([]Link, error) {
	if len(b) != n*rowEntryBytes {
		return nil, fmt.Errorf("probe row: %d bytes, want %d for %d ranks", len(b), n*rowEntryBytes, n)
	}
	row := make([]Link, n)
	for i := range row {
		row[i] = Link{
			Latency:   time.Duration(binary.LittleEndian.Uint64(b[i*rowEntryBytes:])),
			Bandwidth: math.Float64frombits(binary.LittleEndian.Uint64(b[i*rowEntryBytes+8:])),
		}
	}
	return row, nil
}

// GraphFromRows assembles the graph from every rank's Probe row: rows[i]
// is rank i's, ranks[i] its host and NUMA node. The link i-j comes from
// the lower rank's row (both hold the same numbers when Ping keeps its
// contract), so every rank builds the same graph.
func GraphFromRows(rows [][]Link, ranks []RankInfo) (*Graph, error) {
	n := len(ranks)
	if len(rows) != n {
		return nil, fmt.Errorf("probe: %d rows for %d ranks", len(rows), n)
	}
	g := NewGraph(n)
	for i, r := range ranks {
		if len(rows[i]) != n {
			return nil, fmt.Errorf("probe: rank %d's row has %d links, want %d", i, len(rows[i]), n)
		}
		g.SetRank(i, r)
		for j := i + 1; j < n; j++ {
			g.SetLink(i, j, rows[i][j])
		}
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	return g, nil
}

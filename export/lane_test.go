package main

import "testing"

// C's lane numbers its other ops as pgbackend.LaneOp does: the index of
// their settings in hg_lane and the op a hand-over names.
func TestLaneOpsAgree(t *testing.T) {
	if !laneOpsAgree() {
		t.Fatal("lane.h's HG_OP_* differ from pgbackend's LaneOp")
	}
}

//go:build race

package collectives_test

// raceEnabled trims the test matrix under the race detector, which runs
// the kernels and copies 5-20x slower.
const raceEnabled = true

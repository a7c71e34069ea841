//go:build race

package netns_test

// raceEnabled: under the race detector the ranks run 5-20 times slower and
// become bound by the CPU, not by the shaped links, so timing checks only
// log their figures and sizes shrink (see cases_test.go).
const raceEnabled = true

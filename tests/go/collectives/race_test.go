//go:build race

package collectives_test

// raceEnabled trims the largest size under the race detector.
const raceEnabled = true

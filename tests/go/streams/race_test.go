//go:build race

package streams_test

// raceEnabled trims the op counts under the race detector.
const raceEnabled = true

//go:build !race

package intra

const raceEnabled = false

package topo

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Sample is one measured transfer: Bytes took Time.
type Sample struct {
	Bytes int
	Time  time.Duration
}

// Fit fits time = alpha + beta·bytes to samples by least squares: alpha
// is the latency, beta the seconds per byte (1/bandwidth). It needs two
// distinct sizes and a positive slope; a negative alpha (noise on a fast
// link) is clamped to 0.
func Fit(samples []Sample) (alpha time.Duration, beta float64, err error) {
	if len(samples) < 2 {
		return 0, 0, fmt.Errorf("fit: %d samples, need at least 2", len(samples))
	}
	var sx, sy float64
	for _, s := range samples {
		if s.Bytes < 0 || s.Time < 0 {
			return 0, 0, fmt.Errorf("fit: negative sample %+v", s)
		}
		sx += float64(s.Bytes)
		sy += s.Time.Seconds()
	}
	k := float64(len(samples))
	mx, my := sx/k, sy/k
	var sxx, sxy float64
	for _, s := range samples {
		dx := float64(s.Bytes) - mx
		sxx += dx * dx
		sxy += dx * (s.Time.Seconds() - my)
	}
	if sxx == 0 {
		return 0, 0, errors.New("fit: all samples have the same size")
	}
	beta = sxy / sxx
	if beta <= 0 || math.IsNaN(beta) {
		return 0, 0, fmt.Errorf("fit: time does not grow with size (slope %g s/B)", beta)
	}
	a := max(my-beta*mx, 0)
	return time.Duration(math.Round(a * 1e9)), beta, nil
}

// FitLink is Fit as a Link (bandwidth 1/beta).
func FitLink(samples []Sample) (Link, error) {
	alpha, beta, err := Fit(samples)
	if err != nil {
		return Link{}, err
	}
	return Link{Latency: alpha, Bandwidth: 1 / beta}, nil
}

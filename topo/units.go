package topo

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Units of the simulator's flags. Sizes: B, KB/MB/GB/TB (powers of 1000),
// KiB/MiB/GiB/TiB or K/M/G/T (powers of 1024). Bandwidths: the same byte
// units per second, or bits per second as bit/Kbit/Mbit/Gbit/Tbit (also
// Gb, Gbps; a lowercase b is a bit, an uppercase B a byte); "/s" and "ps"
// suffixes are optional; bit and SI prefixes are powers of 1000, as
// networks count. A bare number is bytes (per second).

// splitNumber splits "12.5GiB" into 12.5 and "GiB": the longest prefix
// that is a number, and the rest.
func splitNumber(s string) (float64, string, error) {
	s = strings.TrimSpace(s)
	for end := len(s); end > 0; end-- {
		v, err := strconv.ParseFloat(s[:end], 64)
		if err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			return v, strings.TrimSpace(s[end:]), nil
		}
	}
	return 0, "", fmt.Errorf("%q does not start with a number", s)
}

// prefixScale maps a prefix ("", "k", "Mi", ...) to its multiplier.
func prefixScale(prefix string, bareIsBinary bool) (float64, bool) {
	p := strings.ToLower(prefix)
	binary := strings.HasSuffix(p, "i")
	p = strings.TrimSuffix(p, "i")
	exp := strings.Index("kmgt", p) + 1
	if p == "" {
		exp = 0
	} else if exp == 0 || len(p) != 1 {
		return 0, false
	}
	if binary || bareIsBinary {
		return math.Pow(1024, float64(exp)), true
	}
	return math.Pow(1000, float64(exp)), true
}

// ParseBytes parses a size such as "1GiB", "64KiB", "1.5GB", "4M" or "8".
func ParseBytes(s string) (int64, error) {
	v, unit, err := splitNumber(s)
	if err != nil {
		return 0, fmt.Errorf("size: %w", err)
	}
	prefix, isBytes := strings.CutSuffix(unit, "B")
	if !isBytes {
		prefix = strings.TrimSuffix(unit, "b")
		if prefix != unit || strings.HasSuffix(strings.ToLower(unit), "bit") {
			return 0, fmt.Errorf("size %q: unit %q is not a byte unit (B, KiB, MB, ...)", s, unit)
		}
	}
	// "4M" (no B) is binary, "4MB" decimal, "4MiB" binary.
	scale, ok := prefixScale(prefix, !isBytes)
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q", s, unit)
	}
	b := v * scale
	if b < 0 || b > math.MaxInt64/2 || b != math.Trunc(b) {
		return 0, fmt.Errorf("size %q is not a whole, non-negative number of bytes", s)
	}
	return int64(b), nil
}

// ParseBandwidth parses a bandwidth such as "200Gbit", "100GB", "25GB/s",
// "10Gbps" or "1.5GiB/s" into bytes per second.
func ParseBandwidth(s string) (float64, error) {
	v, unit, err := splitNumber(s)
	if err != nil {
		return 0, fmt.Errorf("bandwidth: %w", err)
	}
	u := strings.TrimSuffix(unit, "/s")
	if strings.HasSuffix(u, "ps") && len(u) > 2 {
		u = strings.TrimSuffix(u, "ps")
	}
	var prefix string
	bits := false
	switch {
	case strings.HasSuffix(strings.ToLower(u), "bit"):
		prefix, bits = u[:len(u)-3], true
	case strings.HasSuffix(u, "b"):
		prefix, bits = u[:len(u)-1], true
	case strings.HasSuffix(u, "B"):
		prefix = u[:len(u)-1]
	case u == "":
	default:
		return 0, fmt.Errorf("bandwidth %q: unknown unit %q (want e.g. GB, GiB, Gbit)", s, unit)
	}
	scale, ok := prefixScale(prefix, false)
	if !ok {
		return 0, fmt.Errorf("bandwidth %q: unknown unit %q", s, unit)
	}
	bw := v * scale
	if bits {
		bw /= 8
	}
	if bw <= 0 {
		return 0, fmt.Errorf("bandwidth %q must be positive", s)
	}
	return bw, nil
}

// ParseLatency parses a Go duration ("5us", "1.5µs", "2ms"); "0" is zero.
func ParseLatency(s string) (time.Duration, error) {
	if strings.TrimSpace(s) == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("latency: %w", err)
	}
	if d < 0 {
		return 0, fmt.Errorf("latency %q is negative", s)
	}
	return d, nil
}

// FormatBytes writes a size in the largest binary unit that keeps it at
// least 1, to 4 significant digits ("1 GiB", "1.5 MiB", "8 B").
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.4g %s", v, units[i])
}

// FormatBandwidth writes bytes per second in GB/s (powers of 1000, as
// nccl-tests prints algbw and busbw).
func FormatBandwidth(bw float64) string {
	return fmt.Sprintf("%.4g GB/s", bw/1e9)
}

// FormatDuration writes a duration with 4 significant digits in the unit
// that suits it ("110.3 ms", "12.50 µs").
func FormatDuration(d time.Duration) string {
	s := d.Seconds()
	switch {
	case s >= 1e4:
		return fmt.Sprintf("%.0f s", s)
	case s >= 1:
		return fmt.Sprintf("%.4g s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.4g ms", s*1e3)
	default:
		return fmt.Sprintf("%.4g µs", s*1e6)
	}
}

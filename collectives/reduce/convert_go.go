package reduce

// Pure-Go versions of the 16-bit conversions (see convert.go).

func narrowGo(narrow func(float32) uint16, dst, src []byte) {
	d, s := view[uint16](dst), view[float32](src)
	n := min(len(d), len(s))
	d, s = d[:n], s[:n]
	for i := range d {
		d[i] = narrow(s[i])
	}
}

func widenGo(wide func(uint16) float32, dst, src []byte) {
	d, s := view[float32](dst), view[uint16](src)
	n := min(len(d), len(s))
	d, s = d[:n], s[:n]
	for i := range d {
		d[i] = wide(s[i])
	}
}

// reduceFrom16Go computes dst[i] = dst[i] op widen(src[i]) in float32.
func reduceFrom16Go(dt DType, op Op, dst, src []byte) {
	var wide func(uint16) float32
	switch dt {
	case Float16:
		wide = f16ToF32
	case BFloat16:
		wide = bf16ToF32
	default:
		return
	}
	d, s := view[float32](dst), view[uint16](src)
	n := min(len(d), len(s))
	d, s = d[:n], s[:n]
	switch op {
	case Sum, Avg, PreMulSum:
		for i := range d {
			d[i] += wide(s[i])
		}
	case Prod:
		for i := range d {
			d[i] *= wide(s[i])
		}
	case Max:
		for i := range d {
			d[i] = fmax(d[i], wide(s[i]))
		}
	case Min:
		for i := range d {
			d[i] = fmin(d[i], wide(s[i]))
		}
	}
}

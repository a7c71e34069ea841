package reduce

// Scale computes dst[i] = src[i] * factor: the pre-multiplication of
// PreMulSum. dst may alias src.
//
//   - float32: factor is rounded to float32 and the product computed in
//     float32; float64 in float64.
//   - float16/bfloat16: the element is widened to float32, multiplied by
//     float32(factor), and rounded once to nearest-even.
//   - integers: the product is computed in float64 and converted back
//     truncating toward zero; NaN gives 0 and results outside the type's
//     range saturate at its limits. (int64/uint64 beyond 2^53 lose
//     precision in the float64 product.)
//   - bool: the result is 1 when src[i] != 0 and factor != 0, else 0.
func Scale(dt DType, dst, src []byte, factor float64) {
	if !dt.Valid() {
		return
	}
	if useC(dt, len(dst)) && cScale(dt, dst, src, factor) {
		return
	}
	scaleGo(dt, dst, src, factor)
}

// DivideBy computes buf[i] /= n, finishing an Avg reduction over n ranks.
// Floating-point types divide in their own precision (float16 and bfloat16
// via float32, rounded once to nearest-even); integers divide truncating
// toward zero. n <= 0 and bool (for which Avg is invalid) do nothing.
func DivideBy(dt DType, buf []byte, n int) {
	if !dt.Valid() || dt == Bool || n <= 0 {
		return
	}
	if useC(dt, len(buf)) && cDivideBy(dt, buf, n) {
		return
	}
	divideGo(dt, buf, n)
}

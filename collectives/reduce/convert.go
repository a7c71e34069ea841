package reduce

// Conversions between float32 and the 16-bit float formats, for wire
// compression. dst holds the target type; if the buffers disagree in
// element count, only the common prefix is converted.
//
// Narrowing rounds to nearest, ties to even; overflow gives ±inf; NaN stays
// NaN (sign kept, quiet bit set). Widening is exact.

// Float32ToFloat16 narrows float32 src into float16 dst.
func Float32ToFloat16(dst, src []byte) { convert(Float32, Float16, dst, src) }

// Float16ToFloat32 widens float16 src into float32 dst.
func Float16ToFloat32(dst, src []byte) { convert(Float16, Float32, dst, src) }

// Float32ToBFloat16 narrows float32 src into bfloat16 dst.
func Float32ToBFloat16(dst, src []byte) { convert(Float32, BFloat16, dst, src) }

// BFloat16ToFloat32 widens bfloat16 src into float32 dst.
func BFloat16ToFloat32(dst, src []byte) { convert(BFloat16, Float32, dst, src) }

func convert(from, to DType, dst, src []byte) {
	if useC(Float16, len(src)) && cConvert(from, to, dst, src) {
		return
	}
	switch {
	case from == Float32 && to == Float16:
		narrowGo(f32ToF16, dst, src)
	case from == Float32 && to == BFloat16:
		narrowGo(f32ToBF16, dst, src)
	case from == Float16:
		widenGo(f16ToF32, dst, src)
	case from == BFloat16:
		widenGo(bf16ToF32, dst, src)
	}
}

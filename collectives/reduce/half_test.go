package reduce

import (
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Values computed by torch 2.x: torch.tensor(bits).view(float32).to(float16
// / bfloat16).
var torchRounding = []struct {
	f32      uint32
	f16, b16 uint16
}{
	{0x3f800000, 0x3c00, 0x3f80}, // 1.0
	{0x3f801000, 0x3c00, 0x3f80}, // 1+2^-11: tie, to even
	{0x3f803000, 0x3c02, 0x3f80}, // 1+3*2^-11: tie, to even (up)
	{0x3f808000, 0x3c04, 0x3f80}, // 1+2^-8: bfloat16 tie, to even
	{0x3f818000, 0x3c0c, 0x3f82}, // 1+3*2^-8: bfloat16 tie, to even (up)
	{0x3f800001, 0x3c00, 0x3f80}, // 1.0000001
	{0x477fe000, 0x7bff, 0x4780}, // 65504 (float16 max)
	{0x477feffd, 0x7bff, 0x4780}, // 65519.988
	{0x477ff000, 0x7c00, 0x4780}, // 65520: tie, to even is inf
	{0xc7800000, 0xfc00, 0xc780}, // -65536
	{0x33000000, 0x0000, 0x3300}, // 2^-25: tie between 0 and 2^-24
	{0x33000001, 0x0001, 0x3300}, // just above 2^-25
	{0x33400000, 0x0001, 0x3340}, // 1.5*2^-25
	{0x33c00000, 0x0002, 0x33c0}, // 1.5*2^-24: tie, to even
	{0x322bcc77, 0x0000, 0x322c}, // 1e-8
	{0x80000000, 0x8000, 0x8000}, // -0
	{0x80000001, 0x8000, 0x8000}, // smallest negative float32 subnormal
	{0x00800000, 0x0000, 0x0080}, // smallest float32 normal
	{0x3dcccccd, 0x2e66, 0x3dcd}, // 0.1
	{0x3eaaaaab, 0x3555, 0x3eab}, // 1/3
	{0x7f800000, 0x7c00, 0x7f80}, // inf
	{0x387fda40, 0x03ff, 0x3880}, // 6.1e-5: largest float16 subnormal
	{0x387fe000, 0x0400, 0x3880}, // tie between subnormal 0x3ff and normal 0x400
	{0x387ff000, 0x0400, 0x3880},
	{0x38800000, 0x0400, 0x3880}, // 2^-14: smallest float16 normal
	{0x7f7f0000, 0x7c00, 0x7f7f},
	{0x7f7f7fff, 0x7c00, 0x7f7f}, // just below the bfloat16 overflow tie
	{0x7f7f8000, 0x7c00, 0x7f80}, // bfloat16 tie, to even is inf
}

func TestRoundingMatchesTorch(t *testing.T) {
	for _, tc := range torchRounding {
		f := math.Float32frombits(tc.f32)
		assert.Equalf(t, tc.f16, f32ToF16(f), "float16(%#08x)", tc.f32)
		assert.Equalf(t, tc.b16, f32ToBF16(f), "bfloat16(%#08x)", tc.f32)
	}
}

// format describes a 16-bit float format for the reference rounding.
type format struct {
	name      string
	wide      func(uint16) float32
	narrow    func(float32) uint16
	maxFinite uint16 // bit pattern of the largest finite value; +1 is inf
}

var formats = []format{
	{"float16", f16ToF32, f32ToF16, 0x7bff},
	{"bfloat16", bf16ToF32, f32ToBF16, 0x7f7f},
}

// exact returns v of pattern p in f as an exact big.Float; the pattern just
// above the largest finite value stands for max + ulp (where inf begins).
func (f format) exact(p uint16) *big.Float {
	if p <= f.maxFinite {
		return new(big.Float).SetFloat64(float64(f.wide(p)))
	}
	hi, lo := f.exact(f.maxFinite), f.exact(f.maxFinite-1)
	ulp := new(big.Float).Sub(hi, lo)
	return new(big.Float).Add(hi, ulp)
}

// reference rounds x to nearest, ties to even pattern, by exact comparison
// of the distances to the two neighbouring 16-bit values.
func (f format) reference(x float32) uint16 {
	var sign uint16
	if math.Signbit(float64(x)) {
		sign, x = 0x8000, -x
	}
	// Largest non-negative pattern whose value is <= x (patterns of
	// non-negative finite values are ordered like their values).
	lo := uint16(sort.Search(int(f.maxFinite)+1, func(p int) bool {
		return f.wide(uint16(p)) > x
	}) - 1)
	if lo == f.maxFinite && x > f.wide(lo) && math.IsInf(float64(x), 1) {
		return sign | (f.maxFinite + 1)
	}
	hi := lo + 1
	xv := new(big.Float).SetFloat64(float64(x))
	dLo := new(big.Float).Sub(xv, f.exact(lo))
	dHi := new(big.Float).Sub(f.exact(hi), xv)
	switch c := dLo.Cmp(dHi); {
	case c < 0:
		return sign | lo
	case c > 0:
		return sign | hi
	case lo&1 == 0:
		return sign | lo
	default:
		return sign | hi
	}
}

func TestRoundingMatchesExactReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			var inputs []float32
			// Midpoints between neighbours and the float32 values either
			// side of them, for a sample of patterns across the range.
			for p := uint16(0); p < f.maxFinite; p += 1 + uint16(rng.IntN(7)) {
				mid, _ := new(big.Float).Quo(new(big.Float).Add(f.exact(p), f.exact(p+1)), big.NewFloat(2)).Float32()
				inputs = append(inputs, mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, inf32))
			}
			// Random float32 values with exponents around the 16-bit range.
			for range 20000 {
				exp := uint32(127 - 40 + rng.IntN(60))
				if f.name == "bfloat16" {
					exp = uint32(rng.IntN(255))
				}
				inputs = append(inputs, math.Float32frombits(exp<<23|rng.Uint32()&0x807fffff))
			}
			inputs = append(inputs, 0, inf32, math.MaxFloat32, math.SmallestNonzeroFloat32)
			for _, x := range inputs {
				for _, v := range []float32{x, -x} {
					want := f.reference(v)
					if got := f.narrow(v); got != want {
						require.Failf(t, "rounding differs", "%s(%#08x): got %#04x want %#04x",
							f.name, math.Float32bits(v), got, want)
					}
				}
			}
		})
	}
}

func TestHalfRoundTripIsExact(t *testing.T) {
	for _, f := range formats {
		for p := 0; p < 1<<16; p++ {
			h := uint16(p)
			w := f.wide(h)
			if w != w {
				require.Truef(t, f.narrow(w)&0x7fff > f.maxFinite+1, "%s NaN %#04x lost", f.name, h)
				continue
			}
			require.Equalf(t, h, f.narrow(w), "%s %#04x", f.name, h)
		}
	}
}

func TestNaNStaysNaN(t *testing.T) {
	for _, bits := range []uint32{0x7f800001, 0xff812345, 0x7fc00000, 0xffffffff, 0x7f802000} {
		x := math.Float32frombits(bits)
		assert.Greaterf(t, f32ToF16(x)&0x7fff, uint16(0x7c00), "float16(%#08x)", bits)
		assert.Greaterf(t, f32ToBF16(x)&0x7fff, uint16(0x7f80), "bfloat16(%#08x)", bits)
		assert.Equal(t, uint16(bits>>16)&0x8000, f32ToF16(x)&0x8000, "sign kept")
	}
}

func TestConversionAPI(t *testing.T) {
	src := raw[float32](1, 1+0x1p-11, 65520, -2, 0x1p-25)
	h := make([]byte, 10)
	Float32ToFloat16(h, src)
	assert.Equal(t, raw[uint16](0x3c00, 0x3c00, 0x7c00, 0xc000, 0x0000), h)
	back := make([]byte, 20)
	Float16ToFloat32(back, h)
	assert.Equal(t, raw[float32](1, 1, inf32, -2, 0), back)

	Float32ToBFloat16(h, src)
	assert.Equal(t, raw[uint16](0x3f80, 0x3f80, 0x4780, 0xc000, 0x3300), h)
	BFloat16ToFloat32(back, h)
	assert.Equal(t, raw[float32](1, 1, 65536, -2, 0x1p-25), back)

	// A short destination converts only what fits.
	short := make([]byte, 2)
	Float32ToFloat16(short, src)
	assert.Equal(t, raw[uint16](0x3c00), short)
}

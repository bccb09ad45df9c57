//! The number formats of the fp modes as MLX 0.32.4's CPU kernels decode them: E2M1 weights
//! ([`FP4_LUT`]), E4M3 weights and nvfp4 scales ([`from_fp8`], `detail::FromFP8`), E8M0 scales
//! ([`dequantize_scale`]).

use crate::Float;
use half::{bf16, f16};

/// `FP4_LUT` of `backend/cpu/quantized.cpp`: the E2M1 value of each 4-bit code (bit 3 the sign).
pub const FP4_LUT: [f32; 16] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0];

/// MLX 0.32.4's `detail::FromFP8` (`backend/cpu/unary_ops.h`), written as the C++: the E4M3
/// byte's low 7 bits move into a float16's exponent and mantissa (`v << 7`, and bit 14 set
/// for `v = 127`, making `0x7F` and `0xFF` NaN), the sign from bit 7 to bit 15, and the float16
/// times 256 (exact). So: `0x00` is `+0`, `0x80` is `−0`, `0x01` is `2^-9`, `0x38` is 1,
/// `0x7E` is 448, `0x7F` and `0xFF` are NaN.
pub fn from_fp8(x: u8) -> f32 {
    let v = u16::from(x & 127);
    let sign_bit = u16::from((x >> 7) & 1) << 15;
    let u = (v << 7) | (((v + 1) >> 7) << 14) | sign_bit;
    let converted = f16::from_bits(u);
    // `converted * 256.0`: the float16 widened (exactly) and scaled by a power of two.
    converted.to_f32() * 256.0
}

/// `dequantize_scale<T, group_size>`: a uint8 scale as `T`. Groups of 16 (nvfp4): E4M3,
/// [`from_fp8`] cast to `T`. Otherwise (mxfp4, mxfp8) E8M0: the bf16 with bits
/// `s == 0 ? 0x40 : s << 7` (`2^(s − 127)`, and `2^-127` for `s = 0`; `s = 255` is `+∞`), cast
/// to `T`. Every such value is exact in `T` (a NaN becomes `T`'s NaN).
pub fn dequantize_scale<T: Float>(s: u8, group_size: usize) -> T {
    if group_size == 16 {
        T::from_f32(from_fp8(s))
    } else {
        let bits = if s == 0 { 0x40 } else { u16::from(s) << 7 };
        T::from_f32(Float::to_f32(bf16::from_bits(bits)))
    }
}

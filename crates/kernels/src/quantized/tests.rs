//! The fast paths against the scalar twin (every quantization, both dtypes, both kernels, any
//! blocking), and the twin against hand-computed cases of the C++'s rules.

use super::format::{code, extract_bits};
use super::*;
use crate::bf16_from_f32;
use crate::gemm::{Fused, MultiplyAdd, Separate, TargetMultiplyAdd, gemm};
use crate::testing::gemm::specials;
use crate::testing::quantized::{QuantizedCase, quantization, quantized_cases};
use crate::testing::{same_bits, scaled_floats};
use half::bf16;
use proptest::prelude::*;

/// Activations that stress the rules: ordinary ones, and NaN, ±inf, −0, denormals, values whose
/// products overflow or underflow.
fn value() -> impl Strategy<Value = f32> + Clone {
    scaled_floats((12, -4.0..4.0), (2, -30..30), specials())
}

/// Affine scales and biases: mostly ordinary, with ±0, denormals, huge values, ±inf and NaN.
fn param() -> impl Strategy<Value = f32> + Clone {
    scaled_floats((16, -0.5..0.5), (3, -20..20), specials())
}

/// Values whose bf16 products with E2M1 or E4M3 weights are exact (FMA may then run).
fn ordinary_value() -> impl Strategy<Value = f32> + Clone {
    scaled_floats((8, -4.0..4.0), (1, -20..20), vec![0.0])
}

fn case_of(
    values: impl Strategy<Value = f32> + Clone + 'static,
    quantization: impl Strategy<Value = Quantization>,
) -> impl Strategy<Value = QuantizedCase> {
    quantized_cases(quantization, (1..14, 0..4, 1..40), values, param(), (-3.0..0.0, 0.0..3.0))
}

/// mxfp4, nvfp4 or mxfp8.
fn fp_mode() -> impl Strategy<Value = Quantization> {
    prop::sample::select(vec![Quantization::MXFP4, Quantization::NVFP4, Quantization::MXFP8])
}

/// A blocking `(mc, kc, nc)` to run besides the default one.
fn blocking() -> impl Strategy<Value = (usize, usize, usize)> {
    (1usize..20, 1usize..200, 1usize..40)
}

/// Runs `case` with `x` in `X`, affine scales in `S` and output `O` through the twin and
/// through every kernel with the blocking `(mc, kc, nc)` and the default one; all must agree
/// (bf16 bit for bit, float32 up to a NaN's payload).
fn check<X: Float, S: Float, O: Float>(
    case: &QuantizedCase,
    (mc, kc, nc): (usize, usize, usize),
) -> Result<(), TestCaseError>
where
    for<'a> &'a [S]: Into<FloatSlice<'a>>,
{
    let QuantizedCase { m, k, n, .. } = *case;
    let x_data = case.x::<X>();
    let x = x_data.view();
    let affine = case.affine::<S>();
    let w = case.matrix(&affine);
    let round = |v: f32| O::from_f32(v);
    let bias = case.bias::<O>();
    let options = GemmOptions {
        a_clip: case.a_clip.map(|(lo, hi)| (X::from_f32(lo).to_f32(), X::from_f32(hi).to_f32())),
        bias: bias.as_deref(),
        out_clip: case.out_clip.map(|(lo, hi)| (round(lo), round(hi))),
    };
    let mut expected = vec![O::default(); m * n];
    reference(x, &w, &mut expected, &options).unwrap();
    for kernel in MicroKernel::available() {
        for blocking in [Blocking::new(mc, kc, nc), Blocking::for_shape(m, k, n)] {
            let mut out = vec![O::from_f32(7.0); m * n];
            quantized_matmul_with(kernel, blocking, x, &w, &mut out, &options).unwrap();
            for (i, (&y, &want)) in out.iter().zip(&expected).enumerate() {
                let same = match O::DTYPE {
                    ElementType::F32 => same_bits(y, want),
                    ElementType::Bf16 => y.to_f32().to_bits() == want.to_f32().to_bits(),
                };
                prop_assert!(
                    same,
                    "{} {kernel:?} {blocking:?}: out[{i}] = {y:?}, reference {want:?}",
                    w.quantization()
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn float32_matches_the_reference(case in case_of(value(), quantization()), blocking in blocking()) {
        check::<f32, f32, f32>(&case, blocking)?;
        check::<f32, bf16, f32>(&case, blocking)?;
    }

    #[test]
    fn bf16_matches_the_reference(case in case_of(value(), quantization()), blocking in blocking()) {
        check::<bf16, bf16, bf16>(&case, blocking)?;
    }

    /// The fp modes alone, with longer sums: each group's bf16 `scale · gsum` is rounded before
    /// it joins the sum, which shows only where the two roundings differ.
    #[test]
    fn fp_modes_match_the_reference(
        case in quantized_cases(fp_mode(), (1..10, 1..10, 1..40), value(), param(), (-3.0..0.0, 0.0..3.0)),
        blocking in blocking(),
    ) {
        check::<bf16, bf16, bf16>(&case, blocking)?;
        check::<f32, f32, f32>(&case, blocking)?;
    }

    /// bf16 activations in a float32 product (affine scales in float32, or an fp mode with a
    /// float32 `x` after a float32 clip): with ordinary magnitudes the fp modes' AVX2 path
    /// runs its FMA variant, which must give the same bits.
    #[test]
    fn mixed_dtypes_match_the_reference(case in case_of(ordinary_value(), quantization()), blocking in blocking()) {
        check::<bf16, f32, f32>(&case, blocking)?;
        check::<bf16, bf16, f32>(&case, blocking)?;
        check::<f32, f32, bf16>(&case, blocking)?;
    }
}

/// A `[n, k]` matrix of one code everywhere, with one affine scale and bias everywhere.
fn uniform_affine(quantization: Quantization, code: u32, n: usize, k: usize) -> Vec<u32> {
    let bits = quantization.bits();
    let mut stream = vec![0u8; n * k * bits / 8];
    for i in 0..n * k {
        for b in 0..bits {
            if code >> b & 1 == 1 {
                let at = i * bits + b;
                stream[at / 8] |= 1 << (at % 8);
            }
        }
    }
    stream.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect()
}

#[test]
fn from_fp8_is_the_0_32_4_decoder() {
    assert_eq!(from_fp8(0x00).to_bits(), 0);
    assert_eq!(from_fp8(0x80).to_bits(), 0x8000_0000);
    assert_eq!(from_fp8(0x01), 2f32.powi(-9));
    assert_eq!(from_fp8(0x07), 7.0 * 2f32.powi(-9));
    assert_eq!(from_fp8(0x08), 2f32.powi(-6));
    assert_eq!(from_fp8(0x38), 1.0);
    assert_eq!(from_fp8(0xB8), -1.0);
    assert_eq!(from_fp8(0x3C), 1.5);
    assert_eq!(from_fp8(0x7E), 448.0);
    assert_eq!(from_fp8(0xFE), -448.0);
    assert!(from_fp8(0x7F).is_nan() && from_fp8(0xFF).is_nan());
    // Every byte: E4M3 (bias 7, subnormals below exponent 1, only 0x7F / 0xFF NaN).
    for x in 0..=255u8 {
        let (sign, e, m) = (if x & 0x80 != 0 { -1.0f32 } else { 1.0 }, i32::from(x >> 3 & 15), f32::from(x & 7));
        let want = match (e, x & 0x7F) {
            (_, 0x7F) => f32::NAN,
            (0, _) => sign * m / 8.0 * 2f32.powi(-6),
            _ => sign * (1.0 + m / 8.0) * 2f32.powi(e - 7),
        };
        assert!(same_bits(from_fp8(x), want), "{x:#04x}: {} vs {want}", from_fp8(x));
    }
}

#[test]
fn scales_decode_as_dequantize_scale() {
    let e8m0 = |s: u8| dequantize_scale::<f32>(s, 32);
    assert_eq!(e8m0(0), 2f32.powi(-127));
    assert_eq!(e8m0(1), 2f32.powi(-126));
    assert_eq!(e8m0(126), 0.5);
    assert_eq!(e8m0(127), 1.0);
    assert_eq!(e8m0(128), 2.0);
    assert_eq!(e8m0(254), 2f32.powi(127));
    assert_eq!(e8m0(255), f32::INFINITY);
    assert_eq!(dequantize_scale::<bf16>(0, 32).to_bits(), 0x0040);
    assert_eq!(dequantize_scale::<f32>(0xB8, 16), -1.0);
    assert_eq!(dequantize_scale::<bf16>(0x7F, 16).to_bits(), 0x7FC0);
}

#[test]
fn codes_unpack_in_the_cpp_order() {
    // 3 bits: codes 1..=7, 0 in a 24-bit little-endian word: 0b000_111_110_101_100_011_010_001.
    let word: u32 = (0..8).map(|i| ((i + 1) % 8) << (3 * i)).sum();
    let three = [word as u8, (word >> 8) as u8, (word >> 16) as u8];
    let mut out = [0u32; 8];
    extract_bits(3, &three, &mut out);
    assert_eq!(out, [1, 2, 3, 4, 5, 6, 7, 0]);
    assert_eq!(three, [0xD1, 0x58, 0x1F]);
    // 5 bits: codes 3, 31, 0, 17, 8, 1, 30, 16 in 5 bytes.
    let codes = [3u64, 31, 0, 17, 8, 1, 30, 16];
    let word: u64 = codes.iter().enumerate().map(|(i, &c)| c << (5 * i)).sum();
    let five: Vec<u8> = (0..5).map(|b| (word >> (8 * b)) as u8).collect();
    extract_bits(5, &five, &mut out);
    assert_eq!(out.map(u64::from), codes);
    // 6 bits: codes 63, 0, 42, 21 in 3 bytes.
    let word: u32 = 63 | (42 << 12) | (21 << 18);
    let six = [word as u8, (word >> 8) as u8, (word >> 16) as u8];
    extract_bits(6, &six, &mut out);
    assert_eq!(out[..4], [63, 0, 42, 21]);
    // The bitstream rule agrees with the C++'s byte walk and `extract_bits` on every byte pattern.
    let row: Vec<u8> = (0..120u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    for bits in [1usize, 2, 3, 4, 5, 6, 8] {
        let q = Quantization::affine(bits, 32).unwrap();
        let (factor, per_pack) = (q.pack_factor(), q.bytes_per_pack());
        for pack in 0..row.len() / per_pack {
            let bytes = &row[pack * per_pack..];
            let mut want = [0u32; 8];
            if matches!(bits, 3 | 5 | 6) {
                extract_bits(bits, bytes, &mut want);
            } else {
                let mut wi = u32::from(bytes[0]);
                for w in &mut want[..factor] {
                    *w = wi & q.mask();
                    wi >>= bits;
                }
            }
            for (p, &w) in want[..factor].iter().enumerate() {
                assert_eq!(code(&row, pack * factor + p, bits), w, "{bits} bits, pack {pack}, code {p}");
            }
        }
    }
}

#[test]
fn bf16_rounds_every_step_and_float32_does_not() {
    // Every weight dequantizes to 1 (scale 1, bias 0, code 1), x = 1: a bf16 sum of ones stops
    // at 256 (256 + 1 ties to the even 256); float32 counts to K.
    let (m, n, k) = (3, 20, 512);
    let q = Quantization::affine(4, 64).unwrap();
    let packed = uniform_affine(q, 1, n, k);
    let (ones, zeros) = (vec![1.0f32; n * k / 64], vec![0.0f32; n * k / 64]);
    let scales = Scales::Affine { scales: ones[..].into(), biases: zeros[..].into() };
    let w = QuantizedMatrix::new(&packed, scales, q, n, k).unwrap();
    let x32 = vec![1.0f32; m * k];
    let x16 = vec![bf16::ONE; m * k];
    let mut out32 = vec![0.0f32; m * n];
    let mut out16 = vec![bf16::ZERO; m * n];
    for kernel in MicroKernel::available() {
        let blocking = Blocking::for_shape(m, k, n);
        let x = MatRef::row_major(&x32, m, k).unwrap();
        quantized_matmul_with(kernel, blocking, x, &w, &mut out32, &GemmOptions::default()).unwrap();
        assert!(out32.iter().all(|&y| y == 512.0));
        let x = MatRef::row_major(&x16, m, k).unwrap();
        quantized_matmul_with(kernel, blocking, x, &w, &mut out16, &GemmOptions::default()).unwrap();
        assert!(out16.iter().all(|&y| y.to_f32() == 256.0), "{kernel:?}: {:?}", out16[0]);
    }
    reference(MatRef::row_major(&x16, m, k).unwrap(), &w, &mut out16, &GemmOptions::default()).unwrap();
    assert!(out16.iter().all(|&y| y.to_f32() == 256.0));
}

#[test]
fn affine_float32_is_the_float32_gemm_of_the_dequantized_weight() {
    let (m, n, k) = (7, 37, 192);
    for bits in [1, 2, 3, 4, 5, 6, 8] {
        let q = Quantization::affine(bits, 64).unwrap();
        let packed: Vec<u32> = (0..n * k * bits / 32).map(|i| (i as u32).wrapping_mul(2_654_435_761)).collect();
        let scales: Vec<f32> = (0..n * k / 64).map(|i| (i as f32 * 0.37).sin() * 0.1).collect();
        let biases: Vec<f32> = (0..n * k / 64).map(|i| (i as f32 * 0.91).cos() * 0.3).collect();
        let w = QuantizedMatrix::new(
            &packed,
            Scales::Affine { scales: scales[..].into(), biases: biases[..].into() },
            q,
            n,
            k,
        )
        .unwrap();
        let row = |j: usize| &format::bytes(&packed)[j * k * bits / 8..];
        let dense: Vec<f32> = (0..n * k)
            .map(|i| {
                let (j, p) = (i / k, i % k);
                let (s, b) = (scales[j * k / 64 + p / 64], biases[j * k / 64 + p / 64]);
                TargetMultiplyAdd::mul_add(s, code(row(j), p, bits) as f32, b)
            })
            .collect();
        let x: Vec<f32> = (0..m * k).map(|i| ((i * 7919) % 1013) as f32 / 97.0 - 5.0).collect();
        let x = MatRef::row_major(&x, m, k).unwrap();
        let (mut want, mut out) = (vec![0.0f32; m * n], vec![0.0f32; m * n]);
        gemm(x, MatRef::row_major(&dense, n, k).unwrap().t(), &mut want, &GemmOptions::default()).unwrap();
        quantized_matmul(x, &w, &mut out, &GemmOptions::default()).unwrap();
        assert_eq!(
            out.iter().map(|y| y.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|y| y.to_bits()).collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_group_scaled_to_minus_zero_leaves_the_sum_at_plus_zero() {
    // nvfp4 scale 0xB8 = −1 and weights +0: each group gives −1 · (+0) = −0, and MLX's
    // `sum = 0; sum += −0` is +0.
    let (m, n, k) = (2, 17, 32);
    let packed = vec![0u32; n * k / 8];
    let scales = vec![0xB8u8; n * k / 16];
    let w = QuantizedMatrix::new(&packed, Scales::Fp(&scales), Quantization::NVFP4, n, k).unwrap();
    let x = vec![1.0f32; m * k];
    let x16 = vec![bf16::ONE; m * k];
    for kernel in MicroKernel::available() {
        let blocking = Blocking::for_shape(m, k, n);
        let mut out = vec![7.0f32; m * n];
        quantized_matmul_with(
            kernel,
            blocking,
            MatRef::row_major(&x, m, k).unwrap(),
            &w,
            &mut out,
            &GemmOptions::default(),
        )
        .unwrap();
        assert!(out.iter().all(|y| y.to_bits() == 0), "{kernel:?}: {out:?}");
        let mut out = vec![bf16::ONE; m * n];
        let x = MatRef::row_major(&x16, m, k).unwrap();
        quantized_matmul_with(kernel, blocking, x, &w, &mut out, &GemmOptions::default()).unwrap();
        assert!(out.iter().all(|y| y.to_bits() == 0), "{kernel:?}: {out:?}");
    }
    let mut out = vec![7.0f32; m * n];
    reference(MatRef::row_major(&x, m, k).unwrap(), &w, &mut out, &GemmOptions::default()).unwrap();
    assert!(out.iter().all(|y| y.to_bits() == 0));
}

#[test]
fn an_empty_product_is_zero_plus_the_bias() {
    let x: [f32; 0] = [];
    let bias = [-0.0f32, 2.5];
    let w = QuantizedMatrix::new(&[], Scales::Fp(&[]), Quantization::MXFP4, 2, 0).unwrap();
    let x = MatRef::row_major(&x, 3, 0).unwrap();
    let mut out = [9.0f32; 6];
    quantized_matmul(x, &w, &mut out, &GemmOptions::default()).unwrap();
    assert!(out.iter().all(|y| y.to_bits() == 0));
    let options = GemmOptions { bias: Some(&bias), ..GemmOptions::default() };
    quantized_matmul(x, &w, &mut out, &options).unwrap();
    assert_eq!(out.map(f32::to_bits), [0, 2.5f32.to_bits()].repeat(3)[..]);
    reference(x, &w, &mut out, &options).unwrap();
    assert_eq!(out.map(f32::to_bits), [0, 2.5f32.to_bits()].repeat(3)[..]);
}

#[test]
fn the_product_dtype_is_mlx_s_promotion() {
    let (f, b) = ([0.0f32; 2], [bf16::ZERO; 2]);
    let packed = [0u32; 8];
    let q = Quantization::affine(4, 32).unwrap();
    let bf16_scales = Scales::Affine { scales: b[..].into(), biases: b[..].into() };
    let f32_scales = Scales::Affine { scales: f[..].into(), biases: b[..].into() };
    let bf16_scales = QuantizedMatrix::new(&packed, bf16_scales, q, 2, 32).unwrap();
    let f32_scales = QuantizedMatrix::new(&packed, f32_scales, q, 2, 32).unwrap();
    assert_eq!(bf16_scales.product_dtype(ElementType::Bf16), ElementType::Bf16);
    assert_eq!(bf16_scales.product_dtype(ElementType::F32), ElementType::F32);
    assert_eq!(f32_scales.product_dtype(ElementType::Bf16), ElementType::F32);
    let fp = QuantizedMatrix::new(&packed, Scales::Fp(&[127; 2]), Quantization::MXFP4, 2, 32).unwrap();
    assert_eq!(fp.product_dtype(ElementType::Bf16), ElementType::Bf16);
    assert_eq!(fp.product_dtype(ElementType::F32), ElementType::F32);
}

#[test]
fn quantizations_are_those_mlx_computes_with_its_defaults_and_names() {
    use QuantizationMode::*;
    for bits in [1, 2, 3, 4, 5, 6, 8] {
        for group in [32, 64, 128] {
            assert!(Quantization::new(Affine, bits, group).is_ok(), "affine {bits} bits, groups of {group}");
        }
    }
    for (mode, bits, group) in [(Affine, 7, 64), (Affine, 4, 16), (Affine, 0, 64), (Mxfp4, 4, 64), (Nvfp4, 8, 16)] {
        let error = Quantization::new(mode, bits, group).unwrap_err();
        assert_eq!(error, Error::Quantization { mode, bits, group_size: group });
        assert!(
            error.to_string().starts_with(&format!("{mode} with group size {group} and {bits} bits: MLX supports"))
        );
    }
    // Absent values take MLX's defaults for the mode (`_defaults_for_mode`).
    for (mode, bits, group) in [(Affine, 4, 64), (Mxfp4, 4, 32), (Nvfp4, 4, 16), (Mxfp8, 8, 32)] {
        let q = Quantization::with_defaults(mode, None, None).unwrap();
        assert_eq!((q.mode(), q.bits(), q.group_size()), (mode, bits, group));
        assert_eq!(Quantization::default_for(mode), q);
        assert_eq!(mode.as_str().parse::<QuantizationMode>(), Ok(mode));
    }
    assert_eq!(Quantization::with_defaults(Affine, Some(8), None), Quantization::affine(8, 64));
    assert_eq!(Quantization::with_defaults(Affine, None, Some(32)), Quantization::affine(4, 32));
    assert!("int4".parse::<QuantizationMode>().is_err());
}

#[test]
fn bad_arguments_are_errors() {
    assert!(Quantization::affine(7, 64).is_err());
    assert!(Quantization::affine(0, 64).is_err());
    assert!(Quantization::affine(4, 16).is_err());
    assert!(Quantization::new(QuantizationMode::Mxfp4, 4, 16).is_err());
    assert!(Quantization::new(QuantizationMode::Nvfp4, 4, 32).is_err());
    assert!(Quantization::new(QuantizationMode::Mxfp8, 4, 32).is_err());
    let q = Quantization::affine(4, 32).unwrap();
    let (packed, params) = (vec![0u32; 2 * 64 / 8], vec![0.0f32; 4]);
    let affine = Scales::Affine { scales: params[..].into(), biases: params[..].into() };
    assert!(QuantizedMatrix::new(&packed, affine, q, 2, 64).is_ok());
    // K not a multiple of the group, the wrong number of words or scales, scales of another mode.
    assert!(QuantizedMatrix::new(&packed, affine, q, 4, 48).is_err());
    assert!(QuantizedMatrix::new(&packed[1..], affine, q, 2, 64).is_err());
    let short = Scales::Affine { scales: params[1..].into(), biases: params[..].into() };
    assert!(QuantizedMatrix::new(&packed, short, q, 2, 64).is_err());
    assert!(QuantizedMatrix::new(&packed, Scales::Fp(&[0; 4]), q, 2, 64).is_err());
    assert!(QuantizedMatrix::new(&packed, affine, Quantization::MXFP4, 2, 64).is_err());
    assert!(QuantizedMatrix::new(&packed, affine, q, usize::MAX, 64).is_err());
    let w = QuantizedMatrix::new(&packed, affine, q, 2, 64).unwrap();
    let x = vec![0.0f32; 3 * 64];
    let mut out = vec![0.0f32; 6];
    let options = GemmOptions::default();
    assert!(quantized_matmul(MatRef::row_major(&x, 3, 64).unwrap(), &w, &mut out, &options).is_ok());
    assert!(quantized_matmul(MatRef::row_major(&x, 6, 32).unwrap(), &w, &mut out, &options).is_err());
    assert!(quantized_matmul(MatRef::row_major(&x, 3, 64).unwrap(), &w, &mut out[1..], &options).is_err());
    let bias = [0.0f32; 3];
    let options = GemmOptions { bias: Some(&bias), ..GemmOptions::default() };
    assert!(quantized_matmul(MatRef::row_major(&x, 3, 64).unwrap(), &w, &mut out, &options).is_err());
    assert!(reference(MatRef::row_major(&x, 3, 64).unwrap(), &w, &mut out, &options).is_err());
}

#[test]
fn the_bits_do_not_depend_on_the_number_of_threads() {
    let (m, k, n) = (203usize, 256usize, 75usize);
    let x: Vec<bf16> = (0..m * k).map(|i| bf16_from_f32(((i * 7919) % 1013) as f32 / 97.0 - 5.0)).collect();
    let packed: Vec<u32> = (0..n * k / 8).map(|i| (i as u32).wrapping_mul(2_654_435_761)).collect();
    let scales: Vec<u8> = (0..n * k / 32).map(|i| 120 + (i % 12) as u8).collect();
    let bias: Vec<bf16> = (0..n).map(|j| bf16_from_f32(j as f32 * 0.37 - 9.0)).collect();
    let w = QuantizedMatrix::new(&packed, Scales::Fp(&scales), Quantization::MXFP4, n, k).unwrap();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut out = vec![bf16::ZERO; m * n];
        pool.install(|| {
            let x = MatRef::row_major(&x, m, k).unwrap();
            quantized_matmul(x, &w, &mut out, &GemmOptions { bias: Some(&bias), ..GemmOptions::default() }).unwrap();
        });
        out.iter().map(|y| y.to_bits()).collect::<Vec<_>>()
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(5));
}

/// Both rules on any target: an affine float32 product under each rule is the gemm under that
/// rule of the weight dequantized under it (`scale · q + bias` one step of the rule), and the
/// two rules give different bits here.
#[test]
fn affine_float32_follows_each_multiply_add_rule() {
    fn run<R: MultiplyAdd>(x: MatRef<'_, f32>, w: &QuantizedMatrix<'_>, dense: &[f32]) -> (Vec<u32>, Vec<u32>) {
        let (m, n, k) = (x.rows(), w.n(), x.cols());
        let (mut want, mut out) = (vec![0.0f32; m * n], vec![0.0f32; m * n]);
        let dense = MatRef::row_major(dense, n, k).unwrap();
        crate::gemm::reference_with::<R, f32, f32, f32>(x, dense.t(), &mut want, &GemmOptions::default()).unwrap();
        reference_with::<R, f32, f32>(x, w, &mut out, &GemmOptions::default()).unwrap();
        (out.iter().map(|y| y.to_bits()).collect(), want.iter().map(|y| y.to_bits()).collect())
    }
    let (m, n, k, bits) = (3, 5, 128, 4);
    let q = Quantization::affine(bits, 64).unwrap();
    let packed: Vec<u32> = (0..n * k * bits / 32).map(|i| (i as u32).wrapping_mul(2_654_435_761)).collect();
    let scales: Vec<f32> = (0..n * k / 64).map(|i| (i as f32 * 0.37).sin() * 0.1).collect();
    let biases: Vec<f32> = (0..n * k / 64).map(|i| (i as f32 * 0.91).cos() * 0.3).collect();
    let affine = Scales::Affine { scales: scales[..].into(), biases: biases[..].into() };
    let w = QuantizedMatrix::new(&packed, affine, q, n, k).unwrap();
    let row = |j: usize| &format::bytes(&packed)[j * k * bits / 8..];
    let dense = |rule: fn(f32, f32, f32) -> f32| -> Vec<f32> {
        (0..n * k)
            .map(|i| (i / k, i % k))
            .map(|(j, p)| rule(scales[j * 2 + p / 64], code(row(j), p, bits) as f32, biases[j * 2 + p / 64]))
            .collect()
    };
    let x: Vec<f32> = (0..m * k).map(|i| ((i * 7919) % 1013) as f32 / 97.0 - 5.0).collect();
    let x = MatRef::row_major(&x, m, k).unwrap();
    let (separate, separate_gemm) = run::<Separate>(x, &w, &dense(Separate::mul_add));
    let (fused, fused_gemm) = run::<Fused>(x, &w, &dense(Fused::mul_add));
    assert_eq!(separate, separate_gemm);
    assert_eq!(fused, fused_gemm);
    assert_ne!(separate, fused, "the inputs tell the rules apart");
    let mut out = vec![0.0f32; m * n];
    quantized_matmul(x, &w, &mut out, &GemmOptions::default()).unwrap();
    let target = if cfg!(target_arch = "aarch64") { &fused } else { &separate };
    assert_eq!(&out.iter().map(|y| y.to_bits()).collect::<Vec<_>>(), target);
}

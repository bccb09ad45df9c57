//! `kernels::quantized::quantized_matmul` against the MLX primitive it replaces, bit for bit:
//! `quantized_matmul(x, w, scales, biases, transpose=True)` (then `nn.QuantizedLinear`'s
//! separate `+ bias`, and gemma4's clips), for every quantization MLX 0.32.4's CPU computes
//! (affine 1–6 and 8 bits in groups of 32, 64 and 128; mxfp4, nvfp4, mxfp8), float32 and bf16
//! activations, float32 and bf16 affine scales, clip bounds in the activation's dtype or
//! float32 (which promotes the clipped input), `x` row-major, transposed or strided.
//!
//! Two sources of weights: MLX's own `quantize` of random values (the scales a converter
//! writes), and random codes with hand-made scales and biases (±0, denormals, huge values, ±inf
//! and NaN; the fp modes' scale bytes that stress the decoders). Shapes run from one-row
//! batches to several tiles, `K` any number of groups (rarely a multiple of the kernel's
//! blocks). Float32 NaN outputs are compared as NaN (their payload and sign are not part of the
//! contract); bf16 outputs bit for bit.

mod common;

use half::bf16;
use kernels::Float;
use kernels::gemm::GemmOptions;
use kernels::quantized::{FloatSlice, Scales, quantized_matmul};
use kernels::testing::gemm::{Layout, Operand, PADDING, specials};
use kernels::testing::quantized::{QuantizedCase, quantization, quantizations, quantized_cases};
use kernels::testing::{same_as_mlx, scaled_floats};
use proptest::prelude::*;
use tensor::{Array, Element};

/// An element type both sides know.
trait Scalar: Float + Element {}
impl Scalar for f32 {}
impl Scalar for bf16 {}

/// Activations: ordinary ones, and NaN, ±inf, −0, denormals, values whose products overflow or
/// underflow.
fn value() -> impl Strategy<Value = f32> + Clone {
    scaled_floats((12, -4.0..4.0), (2, -30..30), specials())
}

/// Hand-made affine scales and biases: mostly ordinary, with ±0, denormals, huge values, ±inf
/// and NaN.
fn param() -> impl Strategy<Value = f32> + Clone {
    scaled_floats((16, -0.5..0.5), (3, -20..20), specials())
}

/// Products of one to a few tiles of rows, 1–4 groups, 1–40 outputs, random codes and
/// hand-made scales; clips half the time.
fn hand_made(rows: std::ops::Range<usize>) -> impl Strategy<Value = QuantizedCase> {
    quantized_cases(quantization(), (rows, 1..5, 1..40), value(), param(), (-3.0..0.5, -0.5..3.0))
}

/// The MLX array viewing `operand`'s storage as its `MatRef` does.
fn array<T: Scalar>(operand: &Operand<T>) -> Array {
    let Operand { storage, rows, cols, layout } = operand;
    let (rows, cols) = (*rows as i32, *cols as i32);
    match layout {
        Layout::RowMajor => Array::from_slice(storage, &[rows, cols]).unwrap(),
        Layout::Transposed => Array::from_slice(storage, &[cols, rows]).unwrap().t().unwrap(),
        Layout::Strided => {
            Array::from_slice(storage, &[rows, cols + PADDING as i32]).unwrap().slice_axis(1, 0, cols).unwrap()
        }
    }
}

fn scalar<T: Scalar>(x: f32) -> Array {
    Array::from_slice(&[T::from_f32(x)], &[]).unwrap()
}

/// MLX's `[clip] → quantized_matmul → [+ bias] → [clip]` on `case` with `x` in `X`, affine
/// scales and biases in `S`, input clip bounds in `C` (the clipped input is the promotion of
/// `X` and `C`), whose product dtype is `O` (the bias and the output bounds in `O`), against
/// `kernels::quantized::quantized_matmul` on the same storage.
fn check<X: Scalar, S: Scalar, C: Scalar, O: Scalar>(case: &QuantizedCase) -> Result<(), TestCaseError>
where
    for<'a> &'a [S]: Into<FloatSlice<'a>>,
{
    let QuantizedCase { m, k, n, quantization: q, .. } = *case;
    let x = case.x::<X>();
    let affine = case.affine::<S>();
    let matrix = case.matrix(&affine);
    let bias = case.bias::<O>();

    let mut xa = array(&x);
    if let Some((lo, hi)) = case.a_clip {
        xa = xa.clip(Some(&scalar::<C>(lo)), Some(&scalar::<C>(hi))).unwrap();
    }
    let packed = Array::from_slice(&case.packed, &[n as i32, (k * q.bits() / 32) as i32]).unwrap();
    let shape = [n as i32, (k / q.group_size()) as i32];
    let (scales, biases) = match matrix.scales() {
        Scales::Affine { .. } => {
            (Array::from_slice(&affine.0, &shape).unwrap(), Some(Array::from_slice(&affine.1, &shape).unwrap()))
        }
        Scales::Fp(bytes) => (Array::from_slice(bytes, &shape).unwrap(), None),
    };
    let mut y = xa
        .quantized_matmul(
            &packed,
            &scales,
            biases.as_ref(),
            true,
            Some(q.group_size() as i32),
            Some(q.bits() as i32),
            q.mode().as_str(),
        )
        .unwrap();
    if let Some(bias) = &bias {
        y = y.add(Array::from_slice(bias, &[n as i32]).unwrap()).unwrap();
    }
    if let Some((lo, hi)) = case.out_clip {
        y = y.clip(Some(&scalar::<O>(lo)), Some(&scalar::<O>(hi))).unwrap();
    }
    prop_assert_eq!(y.dtype(), <O as Element>::DTYPE);
    let expected = y.to_vec::<O>().unwrap();

    let options = GemmOptions {
        a_clip: case.a_clip.map(|(lo, hi)| (C::from_f32(lo).to_f32(), C::from_f32(hi).to_f32())),
        bias: bias.as_deref(),
        out_clip: case.out_clip.map(|(lo, hi)| (O::from_f32(lo), O::from_f32(hi))),
    };
    let mut out = vec![O::from_f32(7.0); m * n];
    quantized_matmul(x.view(), &matrix, &mut out, &options).unwrap();
    for (i, (&ours, &mlx)) in out.iter().zip(&expected).enumerate() {
        prop_assert!(
            same_as_mlx(ours, mlx),
            "{} [{}, {}] × [{}, {}]: out[{}] (row {}, col {}): ours {:?} ({:#x}), MLX {:?} ({:#x})",
            q,
            m,
            k,
            n,
            k,
            i,
            i / n,
            i % n,
            ours,
            ours.to_f32().to_bits(),
            mlx,
            mlx.to_f32().to_bits()
        );
    }
    Ok(())
}

/// [`check`] with the product dtype `O` MLX computes in for `X`, `S` and `C`
/// ([`QuantizedMatrix::product_dtype`](kernels::quantized::QuantizedMatrix::product_dtype) of
/// the clipped input's dtype).
fn check_promoted<X: Scalar, S: Scalar, C: Scalar>(case: &QuantizedCase) -> Result<(), TestCaseError>
where
    for<'a> &'a [S]: Into<FloatSlice<'a>>,
{
    let affine = case.affine::<S>();
    let clipped = match case.a_clip {
        Some(_) if <X as Float>::DTYPE != <C as Float>::DTYPE => kernels::ElementType::F32,
        _ => <X as Float>::DTYPE,
    };
    match case.matrix(&affine).product_dtype(clipped) {
        kernels::ElementType::F32 => check::<X, S, C, f32>(case),
        kernels::ElementType::Bf16 => check::<X, S, C, bf16>(case),
    }
}

/// [`check`] for every pairing of activation, scale and bound dtypes (8 of them): the affine
/// product's dtype is the promotion of the clipped input's and the scales', the fp modes' the
/// clipped input's.
fn check_all_dtypes(case: &QuantizedCase) -> Result<(), TestCaseError> {
    check_promoted::<f32, f32, f32>(case)?;
    check_promoted::<f32, f32, bf16>(case)?;
    check_promoted::<f32, bf16, f32>(case)?;
    check_promoted::<f32, bf16, bf16>(case)?;
    check_promoted::<bf16, f32, f32>(case)?;
    check_promoted::<bf16, f32, bf16>(case)?;
    check_promoted::<bf16, bf16, f32>(case)?;
    check_promoted::<bf16, bf16, bf16>(case)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Random codes and hand-made scales, every quantization, up to a few tiles of rows.
    #[test]
    fn hand_made_weights_match_mlx(case in hand_made(1..30)) {
        check_all_dtypes(&case)?;
    }

    /// One-row batches (the product of a single token).
    #[test]
    fn one_row_batches_match_mlx(case in hand_made(1..2)) {
        check_all_dtypes(&case)?;
    }
}

/// Weights as MLX's `quantize` makes them from `w` `[n, k]` (values in `S`): the packed codes,
/// the scales and (affine) biases as read back from MLX.
fn quantized_by_mlx<S: Scalar>(case: &mut QuantizedCase, w: &[f32]) {
    let q = case.quantization;
    let w = Array::from_slice(&kernels::testing::cast::<S>(w), &[case.n as i32, case.k as i32]).unwrap();
    let (packed, scales, biases) = common::quantize_as(&w, q);
    case.packed = packed.to_vec::<u32>().unwrap();
    let widen = |a: &Array| a.astype(tensor::Dtype::F32).unwrap().to_vec::<f32>().unwrap();
    match biases {
        Some(biases) => (case.scales, case.biases) = (widen(&scales), widen(&biases)),
        None => case.fp_scales = scales.to_vec::<u8>().unwrap(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Weights quantized by MLX itself from random bf16 values: the scales and biases a
    /// converter writes (cast to the scale dtype under test, exactly for bf16 scales).
    #[test]
    fn weights_quantized_by_mlx_match_mlx(
        mut case in quantized_cases(quantization(), (1..24, 1..5, 1..40), value(), param(), (-3.0..0.5, -0.5..3.0)),
        seed in any::<u64>(),
    ) {
        // `quantize` packs 32 values at a time: K a multiple of 32.
        prop_assume!((case.n * case.k).is_multiple_of(32) && case.k.is_multiple_of(32));
        let w = kernels::testing::lcg_values::<f32>(case.n * case.k, seed, 1.0);
        quantized_by_mlx::<bf16>(&mut case, &w);
        check_all_dtypes(&case)?;
    }
}

/// Every quantization at one shape with K spanning several of the kernel's k blocks and a
/// partial last one, and rows and outputs not multiples of the register tile: MLX-quantized
/// weights, bf16 and float32 activations.
#[test]
fn every_quantization_at_a_multi_block_shape() {
    for q in quantizations() {
        let (m, n) = (13, 37);
        let k = 11 * q.group_size().max(32);
        let mut case = QuantizedCase {
            m,
            k,
            n,
            quantization: q,
            x: kernels::testing::lcg_values::<f32>(m * k, 1, 3.0),
            x_layout: Layout::RowMajor,
            packed: Vec::new(),
            scales: Vec::new(),
            biases: Vec::new(),
            fp_scales: Vec::new(),
            bias: Some(kernels::testing::lcg_values::<f32>(n, 2, 1.0)),
            a_clip: Some((-2.0, 2.5)),
            out_clip: None,
        };
        quantized_by_mlx::<f32>(&mut case, &kernels::testing::lcg_values::<f32>(n * k, 3, 1.0));
        if let Err(e) = check_all_dtypes(&case) {
            panic!("{q}: {e}");
        }
    }
}

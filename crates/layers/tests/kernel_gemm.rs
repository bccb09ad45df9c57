//! `kernels::gemm` against the MLX primitives it replaces, bit for bit: `matmul`, `addmm`
//! (α = β = 1, a biased `nn.Linear`), mlx-vlm's clippable linear (`clip` → `matmul` → `clip`
//! with 0-d bounds in the activation's dtype), float32, bf16 and mixed operands, operands
//! row-major, transposed (`W.T`) or strided, with NaN, ±inf, −0, denormals and overflowing
//! products in the inputs.
//!
//! MLX's float32 matmul must be the stock wheel's reference BLAS: build these tests with
//! `MLX_BLAS=none` (`MLX_BLAS=none cargo test -p gemma-vision-layers --test kernel_gemm`). Float32 NaN
//! outputs are compared as NaN (their payload and sign are not part of the contract); bf16
//! outputs bit for bit.

mod common;

use common::require_reference_blas;

use half::bf16;
use kernels::Float;
use kernels::gemm::{GemmOptions, MatRef, gemm};
use kernels::testing::gemm::{Case, Layout, Operand, PADDING, cases, specials};
use kernels::testing::{same_as_mlx, scaled_floats};
use proptest::prelude::*;
use tensor::{Array, Dtype, Element};

/// An element type both sides know.
trait Scalar: Float + Element {}
impl Scalar for f32 {}
impl Scalar for bf16 {}

/// Ordinary values, and the ones that stress the rules.
fn value() -> impl Strategy<Value = f32> + Clone {
    scaled_floats((12, -4.0..4.0), (3, -40..40), specials())
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

fn scalar<T: Scalar>(x: T) -> Array {
    Array::from_slice(&[x], &[]).unwrap()
}

/// Shapes from 1-element tails to a few tiles and k blocks (the kernel's tile is 6 × 16, its
/// k block at most 256); clips whose bounds may cross.
fn case() -> impl Strategy<Value = Case> {
    let extent = |small: usize, large: usize| prop_oneof![3 => 1usize..small, 1 => small..large];
    cases((extent(20, 40), extent(40, 600), extent(40, 70)), value(), (-3.0..0.5, -0.5..3.0))
}

/// MLX's `[clip] → matmul | addmm → [clip]` on operands of dtypes `A`, `B`, whose result dtype
/// is `O`, against `kernels::gemm` on the same storage.
fn check<A: Scalar, B: Scalar, O: Scalar>(case: &Case) -> Result<(), TestCaseError> {
    let Case { m, n, .. } = *case;
    let (a, b) = case.operands::<A, B>();
    let bias = case.bias::<O>();
    // Bounds as mlx-vlm's clip scalars: 0-d arrays of the activation's (output's) dtype.
    let a_clip = case.a_clip.map(|(lo, hi)| (A::from_f32(lo), A::from_f32(hi)));
    let out_clip = case.out_clip.map(|(lo, hi)| (O::from_f32(lo), O::from_f32(hi)));

    let mut x = array(&a);
    if let Some((lo, hi)) = a_clip {
        x = x.clip(Some(&scalar(lo)), Some(&scalar(hi))).unwrap();
    }
    let mut y = match &bias {
        Some(bias) => Array::from_slice(bias, &[n as i32]).unwrap().addmm(&x, &array(&b), 1.0, 1.0).unwrap(),
        None => x.matmul(&array(&b)).unwrap(),
    };
    if let Some((lo, hi)) = out_clip {
        y = y.clip(Some(&scalar(lo)), Some(&scalar(hi))).unwrap();
    }
    prop_assert_eq!(y.dtype(), <O as Element>::DTYPE);
    let expected = y.to_vec::<O>().unwrap();

    let options =
        GemmOptions { a_clip: a_clip.map(|(lo, hi)| (lo.to_f32(), hi.to_f32())), bias: bias.as_deref(), out_clip };
    let mut out = vec![O::from_f32(7.0); m * n];
    gemm(a.view(), b.view(), &mut out, &options).unwrap();
    for (i, (&ours, &mlx)) in out.iter().zip(&expected).enumerate() {
        prop_assert!(
            same_as_mlx(ours, mlx),
            "out[{}] (row {}, col {}): ours {:?} ({:#x}), MLX {:?} ({:#x})",
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn float32_products_match_mlx(case in case()) {
        require_reference_blas();
        check::<f32, f32, f32>(&case)?;
    }

    #[test]
    fn bf16_products_match_mlx(case in case()) {
        check::<bf16, bf16, bf16>(&case)?;
    }

    /// MLX casts both operands to the result dtype (float32) first.
    #[test]
    fn mixed_products_match_mlx(case in case()) {
        require_reference_blas();
        check::<f32, bf16, f32>(&case)?;
        check::<bf16, f32, f32>(&case)?;
    }
}

/// mlx-vlm's activations are `[B, L, D]`: MLX flattens the leading axes before the product
/// (`matmul` and `addmm` alike), so a 3-D product is the 2-D one over `B · L` rows.
#[test]
fn a_batched_activation_is_the_flattened_product() {
    require_reference_blas();
    let (batch, tokens, k, n) = (2usize, 13usize, 300usize, 37usize);
    let x: Vec<f32> = (0..batch * tokens * k).map(|i| ((i * 7919) % 1000) as f32 / 250.0 - 2.0).collect();
    let w: Vec<f32> = (0..n * k).map(|i| ((i * 104_729) % 1000) as f32 / 333.0 - 1.5).collect();
    let bias: Vec<f32> = (0..n).map(|i| i as f32 * 1000.5 - 9000.0).collect();
    for dtype in [Dtype::F32, Dtype::Bf16] {
        let xa = Array::from_slice(&x, &[batch as i32, tokens as i32, k as i32]).unwrap().astype(dtype).unwrap();
        let wa = Array::from_slice(&w, &[n as i32, k as i32]).unwrap().astype(dtype).unwrap();
        let ba = Array::from_slice(&bias, &[n as i32]).unwrap().astype(dtype).unwrap();
        let y = ba.addmm(&xa, &wa.t().unwrap(), 1.0, 1.0).unwrap();
        assert_eq!(y.shape(), vec![batch as i32, tokens as i32, n as i32]);
        let expected = y.astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap();
        let (xs, ws, bs) = (
            xa.astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap(),
            wa.astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap(),
            ba.astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap(),
        );
        let ours: Vec<f32> = match dtype {
            Dtype::F32 => {
                let mut out = vec![0.0f32; batch * tokens * n];
                let a = MatRef::row_major(&xs, batch * tokens, k).unwrap();
                let b = MatRef::row_major(&ws, n, k).unwrap().t();
                gemm(a, b, &mut out, &GemmOptions { bias: Some(&bs), ..GemmOptions::default() }).unwrap();
                out
            }
            _ => {
                let to16 = |v: &[f32]| v.iter().map(|&x| bf16::from_f32(x)).collect::<Vec<_>>();
                let (x16, w16, b16) = (to16(&xs), to16(&ws), to16(&bs));
                let mut out = vec![bf16::ZERO; batch * tokens * n];
                let a = MatRef::row_major(&x16, batch * tokens, k).unwrap();
                let b = MatRef::row_major(&w16, n, k).unwrap().t();
                gemm(a, b, &mut out, &GemmOptions { bias: Some(&b16), ..GemmOptions::default() }).unwrap();
                out.iter().map(|x| x.to_f32()).collect()
            }
        };
        let differing = ours.iter().zip(&expected).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
        assert_eq!(differing, 0, "{dtype:?}: {differing} of {} outputs differ", ours.len());
    }
}

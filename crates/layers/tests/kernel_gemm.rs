//! `kernels::gemm` against the MLX primitives it replaces, bit for bit: `matmul`, `addmm`
//! (α = β = 1, a biased `nn.Linear`), mlx-vlm's clippable linear (`clip` → `matmul` → `clip`
//! with 0-d bounds in the activation's dtype), float32, bf16 and mixed operands, operands
//! row-major, transposed (`W.T`) or strided, with NaN, ±inf, −0, denormals and overflowing
//! products in the inputs.
//!
//! MLX's float32 matmul must be the stock wheel's reference BLAS: build these tests with
//! `MLX_BLAS=none` (`MLX_BLAS=none cargo test -p layers --test kernel_gemm`). Float32 NaN
//! outputs are compared as NaN (their payload and sign are not part of the contract); bf16
//! outputs bit for bit.

mod common;

use common::require_reference_blas;

use half::bf16;
use kernels::Float;
use kernels::gemm::{GemmOptions, MatRef, gemm};
use proptest::prelude::*;
use tensor::{Array, Dtype, Element};

/// An element type both sides know.
trait Scalar: Float + Element {}
impl Scalar for f32 {}
impl Scalar for bf16 {}

/// Ordinary values, and the ones that stress the rules.
fn value() -> impl Strategy<Value = f32> {
    prop_oneof![
        12 => -4.0f32..4.0,
        3 => (-40i32..40, -1.0f32..1.0).prop_map(|(e, m)| m * 2f32.powi(e)),
        1 => prop::sample::select(vec![
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            0.0,
            1e-40,
            -3e-39,
            f32::MIN_POSITIVE,
            1e30,
            -3e38,
            1e-30,
        ]),
    ]
}

/// How an operand sits in memory.
#[derive(Debug, Clone, Copy)]
enum Layout {
    RowMajor,
    /// Stored transposed and viewed through `.T` (`W.T` of a row-major `W`).
    Transposed,
    /// Row-major with three unused elements after each row (a slice of a wider array).
    Strided,
}

fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![Just(Layout::RowMajor), Just(Layout::Transposed), Just(Layout::Strided)]
}

/// A `rows × cols` operand in `layout`: the host storage and its `MatRef`, and the MLX array
/// viewing the same storage the same way.
struct Operand<T> {
    storage: Vec<T>,
    rows: usize,
    cols: usize,
    layout: Layout,
}

impl<T: Scalar> Operand<T> {
    fn new(values: &[f32], rows: usize, cols: usize, layout: Layout) -> Self {
        let at = |i: usize, j: usize| T::from_f32(values[i * cols + j]);
        let storage = match layout {
            Layout::RowMajor => (0..rows).flat_map(|i| (0..cols).map(move |j| (i, j))).map(|(i, j)| at(i, j)).collect(),
            Layout::Transposed => {
                (0..cols).flat_map(|j| (0..rows).map(move |i| (i, j))).map(|(i, j)| at(i, j)).collect()
            }
            Layout::Strided => (0..rows)
                .flat_map(|i| (0..cols + 3).map(move |j| (i, j)))
                .map(|(i, j)| if j < cols { at(i, j) } else { T::from_f32(f32::NAN) })
                .collect(),
        };
        Operand { storage, rows, cols, layout }
    }

    fn view(&self) -> MatRef<'_, T> {
        let (rows, cols) = (self.rows, self.cols);
        match self.layout {
            Layout::RowMajor => MatRef::row_major(&self.storage, rows, cols).unwrap(),
            Layout::Transposed => MatRef::row_major(&self.storage, cols, rows).unwrap().t(),
            Layout::Strided => MatRef::strided(&self.storage, rows, cols, cols + 3, 1).unwrap(),
        }
    }

    fn array(&self) -> Array {
        let (rows, cols) = (self.rows as i32, self.cols as i32);
        match self.layout {
            Layout::RowMajor => Array::from_slice(&self.storage, &[rows, cols]).unwrap(),
            Layout::Transposed => Array::from_slice(&self.storage, &[cols, rows]).unwrap().t().unwrap(),
            Layout::Strided => {
                Array::from_slice(&self.storage, &[rows, cols + 3]).unwrap().slice_axis(1, 0, cols).unwrap()
            }
        }
    }
}

fn scalar<T: Scalar>(x: T) -> Array {
    Array::from_slice(&[x], &[]).unwrap()
}

/// Bits equal; for float32 any NaN equals any NaN.
fn same<O: Float>(ours: O, mlx: O) -> bool {
    let (x, y) = (ours.to_f32(), mlx.to_f32());
    match O::DTYPE {
        kernels::DType::F32 => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
        kernels::DType::Bf16 => x.to_bits() == y.to_bits(),
    }
}

/// One product: shape, values, layouts and what is fused around it.
#[derive(Debug, Clone)]
struct Case {
    m: usize,
    k: usize,
    n: usize,
    a: Vec<f32>,
    b: Vec<f32>,
    bias: Option<Vec<f32>>,
    a_clip: Option<(f32, f32)>,
    out_clip: Option<(f32, f32)>,
    a_layout: Layout,
    b_layout: Layout,
}

/// Shapes from 1-element tails to a few tiles and k blocks (the kernel's tile is 6 × 16, its
/// k block at most 256).
fn case() -> impl Strategy<Value = Case> {
    let extent = |small: usize, large: usize| prop_oneof![3 => 1usize..small, 1 => small..large];
    (extent(20, 40), extent(40, 600), extent(40, 70))
        .prop_flat_map(|(m, k, n)| {
            (
                Just((m, k, n)),
                prop::collection::vec(value(), m * k),
                prop::collection::vec(value(), k * n),
                prop::option::of(prop::collection::vec(value(), n)),
                prop::option::of((-3.0f32..0.5, -0.5f32..3.0)),
                prop::option::of((-3.0f32..0.5, -0.5f32..3.0)),
                (layout(), layout()),
            )
        })
        .prop_map(|((m, k, n), a, b, bias, a_clip, out_clip, (a_layout, b_layout))| Case {
            m,
            k,
            n,
            a,
            b,
            bias,
            a_clip,
            out_clip,
            a_layout,
            b_layout,
        })
}

/// MLX's `[clip] → matmul | addmm → [clip]` on operands of dtypes `A`, `B`, whose result dtype
/// is `O`, against `kernels::gemm` on the same storage.
fn check<A: Scalar, B: Scalar, O: Scalar>(case: &Case) -> Result<(), TestCaseError> {
    let Case { m, k, n, .. } = *case;
    let a = Operand::<A>::new(&case.a, m, k, case.a_layout);
    let b = Operand::<B>::new(&case.b, k, n, case.b_layout);
    let bias: Option<Vec<O>> = case.bias.as_ref().map(|bias| bias.iter().map(|&x| O::from_f32(x)).collect());
    // Bounds as mlx-vlm's clip scalars: 0-d arrays of the activation's (output's) dtype.
    let a_clip = case.a_clip.map(|(lo, hi)| (A::from_f32(lo), A::from_f32(hi)));
    let out_clip = case.out_clip.map(|(lo, hi)| (O::from_f32(lo), O::from_f32(hi)));

    let mut x = a.array();
    if let Some((lo, hi)) = a_clip {
        x = x.clip(Some(&scalar(lo)), Some(&scalar(hi))).unwrap();
    }
    let mut y = match &bias {
        Some(bias) => Array::from_slice(bias, &[n as i32]).unwrap().addmm(&x, &b.array(), 1.0, 1.0).unwrap(),
        None => x.matmul(&b.array()).unwrap(),
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
            same(ours, mlx),
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

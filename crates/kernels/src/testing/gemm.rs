//! Random products for the tests of [`gemm`](crate::gemm::gemm): operands in the layouts MLX
//! meets (row-major, `W.T`, a slice of a wider array), biases and clips of both sides.

use crate::Float;
use crate::gemm::MatRef;
use proptest::prelude::*;
use std::ops::Range;

/// Values that stress a product's rules: NaN, ±inf, ±0, denormals, and magnitudes whose
/// products overflow or underflow.
pub fn specials() -> Vec<f32> {
    vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, 1e-40, -3e-39, f32::MIN_POSITIVE, 1e30, -3e38, 1e-30]
}

/// How an operand sits in memory.
#[derive(Debug, Clone, Copy)]
pub enum Layout {
    RowMajor,
    /// Stored transposed and viewed through `t()` (`W.T` of a row-major `W`).
    Transposed,
    /// Row-major with [`PADDING`] unused elements (NaNs) after each row: a slice of a wider
    /// array.
    Strided,
}

/// The unused elements after each row of a [`Layout::Strided`] operand.
pub const PADDING: usize = 3;

/// Any [`Layout`].
pub fn layout() -> impl Strategy<Value = Layout> + Clone {
    prop_oneof![Just(Layout::RowMajor), Just(Layout::Transposed), Just(Layout::Strided)]
}

/// A `rows × cols` operand in `layout`: its storage, viewed by [`Operand::view`].
#[derive(Debug, Clone)]
pub struct Operand<T> {
    pub storage: Vec<T>,
    pub rows: usize,
    pub cols: usize,
    pub layout: Layout,
}

impl<T: Float> Operand<T> {
    /// The operand holding `values` (`rows × cols`, row-major) in `layout`.
    pub fn new(values: &[f32], rows: usize, cols: usize, layout: Layout) -> Self {
        let at = |i: usize, j: usize| T::from_f32(values[i * cols + j]);
        let storage = match layout {
            Layout::RowMajor => (0..rows).flat_map(|i| (0..cols).map(move |j| (i, j))).map(|(i, j)| at(i, j)).collect(),
            Layout::Transposed => {
                (0..cols).flat_map(|j| (0..rows).map(move |i| (i, j))).map(|(i, j)| at(i, j)).collect()
            }
            Layout::Strided => (0..rows)
                .flat_map(|i| (0..cols + PADDING).map(move |j| (i, j)))
                .map(|(i, j)| if j < cols { at(i, j) } else { T::from_f32(f32::NAN) })
                .collect(),
        };
        Operand { storage, rows, cols, layout }
    }

    /// The storage as the `rows × cols` matrix it holds.
    pub fn view(&self) -> MatRef<'_, T> {
        let (rows, cols) = (self.rows, self.cols);
        let view = match self.layout {
            Layout::RowMajor => MatRef::row_major(&self.storage, rows, cols),
            Layout::Transposed => MatRef::row_major(&self.storage, cols, rows).map(|m| m.t()),
            Layout::Strided => MatRef::strided(&self.storage, rows, cols, cols + PADDING, 1),
        };
        view.expect("the storage fits its layout")
    }
}

/// One product `a [m, k] · b [k, n]`: its values (row-major), layouts and what is fused
/// around it.
#[derive(Debug, Clone)]
pub struct Case {
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    pub bias: Option<Vec<f32>>,
    pub a_clip: Option<(f32, f32)>,
    pub out_clip: Option<(f32, f32)>,
    pub a_layout: Layout,
    pub b_layout: Layout,
}

impl Case {
    /// `a` in `A` and `b` in `B`, each in its layout.
    pub fn operands<A: Float, B: Float>(&self) -> (Operand<A>, Operand<B>) {
        (Operand::new(&self.a, self.m, self.k, self.a_layout), Operand::new(&self.b, self.k, self.n, self.b_layout))
    }

    /// The bias in `O`.
    pub fn bias<O: Float>(&self) -> Option<Vec<O>> {
        self.bias.as_deref().map(super::cast)
    }
}

/// Products of `extents` `(m, k, n)`, their elements (and a bias's, half the time) from
/// `values`, half the time a clip of `a` and one of the output with bounds from `clip`
/// (`(low, high)`), each operand in any layout.
pub fn cases<S: Strategy<Value = f32> + Clone + 'static>(
    extents: impl Strategy<Value = (usize, usize, usize)>,
    values: S,
    clip: (Range<f32>, Range<f32>),
) -> impl Strategy<Value = Case> {
    extents
        .prop_flat_map(move |(m, k, n)| {
            (
                Just((m, k, n)),
                prop::collection::vec(values.clone(), m * k),
                prop::collection::vec(values.clone(), k * n),
                prop::option::of(prop::collection::vec(values.clone(), n)),
                prop::option::of(clip.clone()),
                prop::option::of(clip.clone()),
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

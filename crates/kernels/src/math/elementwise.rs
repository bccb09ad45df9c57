//! Element-wise binary ops (`add`, `multiply`) with MLX 0.32 CPU bits.
//!
//! MLX's CPU binary ops on floating arrays compute each element in float32 and round to the
//! array dtype: `T(a ∘ b)` (for bf16 through `_MLX_BFloat16`'s float operators). A weak Python
//! scalar is first rounded to `T` ([`scale`] takes it already in `T`). `clip` is `maximum`
//! then `minimum`, which select one operand's value unchanged (a NaN operand on the left wins,
//! payload and all).
//!
//! Every kernel here runs over all cores for long slices, 8 lanes per AVX2 vector (4 per NEON
//! vector) where available, the same bits as the one-element definitions ([`add_scalar`], …).

use crate::cpu::Isa;
use crate::{Error, Float, Result, parallel, rows};

/// `T(a + b)`: one element of MLX's `add`.
#[inline]
pub fn add_scalar<T: Float>(a: T, b: T) -> T {
    T::from_f32(a.to_f32() + b.to_f32())
}

/// `T(a · b)`: one element of MLX's `multiply`.
#[inline]
pub fn multiply_scalar<T: Float>(a: T, b: T) -> T {
    T::from_f32(a.to_f32() * b.to_f32())
}

/// MLX's `maximum(a, b)`: `a` if it is NaN, else the larger (`b` on ties, so
/// `maximum(+0, −0) = −0`); the chosen value's bits unchanged.
#[inline(always)]
pub fn maximum_scalar<T: Float>(a: T, b: T) -> T {
    let (fa, fb) = (a.to_f32(), b.to_f32());
    if fa.is_nan() || fa > fb { a } else { b }
}

/// MLX's `minimum(a, b)`: `a` if it is NaN, else the smaller (`b` on ties).
#[inline(always)]
pub fn minimum_scalar<T: Float>(a: T, b: T) -> T {
    let (fa, fb) = (a.to_f32(), b.to_f32());
    if fa.is_nan() || fa < fb { a } else { b }
}

/// MLX's `clip(x, low, high)`: `minimum(maximum(x, low), high)`, either bound optional, on
/// values of one dtype (`backend/cpu/simd/base_simd.h`): a NaN input stays, a NaN bound
/// replaces the input. The one scalar clip of this crate (the matrix products' operand and
/// output clips included); the vector clips give its bits.
#[inline(always)]
pub fn clip_scalar<T: Float>(x: T, low: Option<T>, high: Option<T>) -> T {
    let x = low.map_or(x, |low| maximum_scalar(x, low));
    high.map_or(x, |high| minimum_scalar(x, high))
}

/// `out[i] = T(a[i] + b[i])`: MLX's `add` of two arrays of dtype `T` and one shape (the
/// residual adds). [`Error::Shape`] unless the three slices have one length.
pub fn add<T: Float>(a: &[T], b: &[T], out: &mut [T]) -> Result<()> {
    binary::<T, Add>("add", a, b, out)
}

/// `out[i] = T(a[i] · b[i])`: MLX's `multiply` of two arrays of dtype `T` and one shape.
/// [`Error::Shape`] unless the three slices have one length.
pub fn multiply<T: Float>(a: &[T], b: &[T], out: &mut [T]) -> Result<()> {
    binary::<T, Multiply>("multiply", a, b, out)
}

/// `acc[i] = T(acc[i] + b[i])`: [`add`] into its first operand (`h = h + y`).
/// [`Error::Shape`] unless the slices have one length.
pub fn add_in_place<T: Float>(acc: &mut [T], b: &[T]) -> Result<()> {
    binary_in_place::<T, Add>("add", acc, b)
}

/// `acc[i] = T(acc[i] · b[i])`: [`multiply`] into its first operand.
/// [`Error::Shape`] unless the slices have one length.
pub fn multiply_in_place<T: Float>(acc: &mut [T], b: &[T]) -> Result<()> {
    binary_in_place::<T, Multiply>("multiply", acc, b)
}

/// `x[i] = T(x[i] · s)` in place: MLX's `multiply` by a scalar `s` already in `T` (a weak
/// Python scalar rounds to `T` first, e.g. gemma4's pooled `* hidden_size**0.5`: bf16 27.75).
pub fn scale<T: Float>(x: &mut [T], s: T) -> Result<()> {
    let s = [s];
    let isa = crate::cpu::isa();
    parallel::for_row_blocks(x, 1, rows::PARALLEL_MIN_ELEMENTS, |_, block| {
        for chunk in block.chunks_mut(SCALE_CHUNK) {
            let factors = [s[0]; SCALE_CHUNK];
            binary_block_in_place::<T, Multiply>(isa, chunk, &factors[..chunk.len()]);
        }
    });
    Ok(())
}

/// Elements [`scale`] broadcasts its scalar over at a time.
const SCALE_CHUNK: usize = 512;

/// `x[i] = clip(x[i], low, high)` in place ([`clip_scalar`]; bounds already in `T`, as MLX
/// promotes them with `x`). Either bound may be absent.
pub fn clip_in_place<T: Float>(x: &mut [T], low: Option<T>, high: Option<T>) -> Result<()> {
    let isa = crate::cpu::isa();
    parallel::for_row_blocks(x, 1, rows::PARALLEL_MIN_ELEMENTS, |_, block| clip_block(isa, block, low, high));
    Ok(())
}

fn binary<T: Float, Op: BinaryOp>(kernel: &'static str, a: &[T], b: &[T], out: &mut [T]) -> Result<()> {
    if a.len() != b.len() || a.len() != out.len() {
        return Err(Error::shape(
            kernel,
            format!("operands of {} and {} values, output of {}", a.len(), b.len(), out.len()),
        ));
    }
    out.copy_from_slice(a);
    binary_in_place::<T, Op>(kernel, out, b)
}

fn binary_in_place<T: Float, Op: BinaryOp>(kernel: &'static str, acc: &mut [T], b: &[T]) -> Result<()> {
    if acc.len() != b.len() {
        return Err(Error::shape(kernel, format!("operands of {} and {} values", acc.len(), b.len())));
    }
    let isa = crate::cpu::isa();
    parallel::for_row_blocks(acc, 1, rows::PARALLEL_MIN_ELEMENTS, |start, block| {
        binary_block_in_place::<T, Op>(isa, block, &b[start..start + block.len()]);
    });
    Ok(())
}

/// MLX's `add` or `multiply` on float32 values, chosen at compile time in every loop.
trait BinaryOp {
    /// Whether the operation is `add` (else `multiply`).
    const ADD: bool;

    #[inline(always)]
    fn apply(a: f32, b: f32) -> f32 {
        if Self::ADD { a + b } else { a * b }
    }
}

struct Add;
struct Multiply;

impl BinaryOp for Add {
    const ADD: bool = true;
}

impl BinaryOp for Multiply {
    const ADD: bool = false;
}

/// `acc[i] = T(Op(acc[i], b[i]))` over one block, by the fastest path the CPU has.
fn binary_block_in_place<T: Float, Op: BinaryOp>(isa: Isa, acc: &mut [T], b: &[T]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = isa.avx2() {
        avx2::binary_in_place::<T, Op>(avx2, acc, b);
        return;
    }
    #[cfg(target_arch = "aarch64")]
    if let Some(neon) = isa.neon() {
        neon::binary_in_place::<T, Op>(neon, acc, b);
        return;
    }
    let _ = isa;
    binary_portable::<T, Op>(acc, b);
}

fn binary_portable<T: Float, Op: BinaryOp>(acc: &mut [T], b: &[T]) {
    for (a, &b) in acc.iter_mut().zip(b) {
        *a = T::from_f32(Op::apply(a.to_f32(), b.to_f32()));
    }
}

fn clip_block<T: Float>(isa: Isa, x: &mut [T], low: Option<T>, high: Option<T>) {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = isa.avx2()
        && crate::element::native::<T>()
    {
        avx2::clip_in_place(avx2, x, low, high);
        return;
    }
    #[cfg(target_arch = "aarch64")]
    if let Some(neon) = isa.neon()
        && crate::element::native::<T>()
    {
        neon::clip_in_place(neon, x, low, high);
        return;
    }
    let _ = isa;
    clip_portable(x, low, high);
}

fn clip_portable<T: Float>(x: &mut [T], low: Option<T>, high: Option<T>) {
    for v in x {
        *v = clip_scalar(*v, low, high);
    }
}

crate::simd::stamp! {
    lanes v for Avx2, Neon;

    /// `acc[i] = T(Op(acc[i], b[i]))`, `LANES` at a time, the tail one by one.
    entry fn binary_in_place[T: Float, Op: BinaryOp](acc: &mut [T], b: &[T]) {
        let n = acc.len().min(b.len());
        let mut i = 0;
        while i + v::LANES <= n {
            let (x, y) = (v::load_at(acc, i), v::load_at(b, i));
            v::store_at(acc, i, if Op::ADD { v::add(x, y) } else { v::mul(x, y) });
            i += v::LANES;
        }
        for i in i..n {
            acc[i] = T::from_f32(Op::apply(acc[i].to_f32(), b[i].to_f32()));
        }
    }

    /// `maximum` then `minimum` as selects on the widened lanes, stored back exactly.
    entry fn clip_in_place[T: Float](x: &mut [T], low: Option<T>, high: Option<T>) {
        let bound = |b: Option<T>| v::splat(b.map_or(0.0, |b| b.to_f32()));
        let (low_lanes, high_lanes) = (bound(low), bound(high));
        let mut i = 0;
        while i + v::LANES <= x.len() {
            let mut y = v::load_at(x, i);
            if low.is_some() {
                y = v::maximum(y, low_lanes);
            }
            if high.is_some() {
                y = v::minimum(y, high_lanes);
            }
            v::store_exact_at(x, i, y);
            i += v::LANES;
        }
        for y in &mut x[i..] {
            *y = clip_scalar(*y, low, high);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{bits, floats};
    use half::bf16;
    use proptest::prelude::*;

    fn raw<T: Float>(v: &[T]) -> Vec<u32> {
        v.iter().map(|x| x.to_f32().to_bits()).collect()
    }

    fn check_paths<T: Float>(a: &[T], b: &[T]) {
        let want_add: Vec<T> = a.iter().zip(b).map(|(&x, &y)| add_scalar(x, y)).collect();
        let want_mul: Vec<T> = a.iter().zip(b).map(|(&x, &y)| multiply_scalar(x, y)).collect();
        let mut out = vec![T::default(); a.len()];
        add(a, b, &mut out).unwrap();
        assert_eq!(bits(&out), bits(&want_add));
        multiply(a, b, &mut out).unwrap();
        assert_eq!(bits(&out), bits(&want_mul));
        let mut acc = a.to_vec();
        add_in_place(&mut acc, b).unwrap();
        assert_eq!(bits(&acc), bits(&want_add));
        let mut acc = a.to_vec();
        multiply_in_place(&mut acc, b).unwrap();
        assert_eq!(bits(&acc), bits(&want_mul));
        let mut portable = a.to_vec();
        binary_portable::<T, Add>(&mut portable, b);
        assert_eq!(bits(&portable), bits(&want_add));

        let s = b.first().copied().unwrap_or_default();
        let mut scaled = a.to_vec();
        scale(&mut scaled, s).unwrap();
        let want: Vec<T> = a.iter().map(|&x| multiply_scalar(x, s)).collect();
        assert_eq!(bits(&scaled), bits(&want));

        for (low, high) in [
            (Some(T::from_f32(-1.5)), Some(T::from_f32(2.0))),
            (None, Some(T::from_f32(0.0))),
            (Some(T::from_f32(-0.0)), None),
        ] {
            let want: Vec<T> = a.iter().map(|&x| clip_scalar(x, low, high)).collect();
            let mut clipped = a.to_vec();
            clip_in_place(&mut clipped, low, high).unwrap();
            assert_eq!(raw(&clipped), raw(&want), "clip keeps the bits, NaN payloads included");
            let mut portable = a.to_vec();
            clip_portable(&mut portable, low, high);
            assert_eq!(raw(&portable), raw(&want));
        }
    }

    #[test]
    fn rejects_bad_extents() {
        let mut out = [0f32; 3];
        assert!(matches!(add(&[1f32; 3], &[1f32; 2], &mut out), Err(Error::Shape { .. })));
        assert!(matches!(multiply(&[1f32; 2], &[1f32; 2], &mut out), Err(Error::Shape { .. })));
        assert!(matches!(add_in_place(&mut out, &[1f32; 2]), Err(Error::Shape { .. })));
    }

    #[test]
    fn clip_follows_mlx_selection() {
        let nan = bf16::from_bits(0x7FA1);
        assert_eq!(clip_scalar(nan, Some(bf16::ONE), None).to_bits(), 0x7FA1, "a NaN input is kept, payload and all");
        assert_eq!(maximum_scalar(0.0f32, -0.0).to_bits(), (-0.0f32).to_bits(), "ties pick the second operand");
        assert!(maximum_scalar(1.0f32, f32::NAN).is_nan());
        assert_eq!(clip_scalar(5.0f32, Some(-1.0), Some(2.0)), 2.0);
        assert_eq!(clip_scalar(-5.0f32, Some(-1.0), Some(2.0)), -1.0);
    }

    proptest! {
        #[test]
        fn paths_agree(
            pairs in prop::collection::vec((
                floats((4, -8.0..8.0), vec![0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-40, 3e38]),
                prop_oneof![4 => -8f32..8.0, 1 => any::<u32>().prop_map(f32::from_bits)],
            ), 0..200),
        ) {
            let (a, b): (Vec<f32>, Vec<f32>) = pairs.into_iter().unzip();
            check_paths(&a, &b);
            let ab: Vec<bf16> = a.iter().map(|&v| bf16::from_bits((v.to_bits() >> 16) as u16)).collect();
            let bb: Vec<bf16> = b.iter().map(|&v| crate::bf16_from_f32(v)).collect();
            check_paths(&ab, &bb);
        }
    }

    #[test]
    fn long_slices_split_over_threads() {
        let n = 100_003;
        let a: Vec<bf16> = (0..n).map(|i| bf16::from_f32((i % 97) as f32 / 7.0 - 6.0)).collect();
        let b: Vec<bf16> = (0..n).map(|i| bf16::from_f32((i % 89) as f32 / 5.0 - 8.0)).collect();
        check_paths(&a, &b);
    }
}

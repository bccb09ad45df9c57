//! `mlx.nn.gelu_approx` (the tanh GELU) times the up projection, op by op in the input dtype.
//!
//! gemma4's `VisionMLP` computes `gelu_approx(gate) * up`, with MLX ops in `T` (each op
//! rounds to `T`, every Python scalar a weak scalar rounded to `T`: in bf16 0.5, 0.796875,
//! 0.044677734375, 1 and the exponent 3):
//!
//! ```text
//! cube  = power(x, 3)                 // C library powf(x, 3.0f), rounded to T
//! inner = (x + 0.044715 * cube) * sqrt(2/π)
//! g     = (0.5 * x) * (1 + tanh(inner))   // C library tanhf, rounded to T
//! out   = g * up
//! ```
//!
//! [`gelu_approx_scalar`] is that sequence for one value (the definition of the bits). In bf16
//! the GELU is a function of 65,536 inputs: [`gelu_approx_mul`] looks it up in a table made
//! once per process by the scalar sequence itself, then multiplies by `up` (8 lanes per AVX2
//! vector, 4 per NEON vector). In float32 it runs the sequence over all cores, the cubes by
//! [`cube_as_pow`](crate::power::cube_as_pow) (`powf`'s bits without calling it for most
//! values, 8 lanes at a time with AVX2) and the `tanh`s by
//! [`tanh_slice`](crate::tanh::tanh_slice) (the C library's `tanhf` bits, 8 lanes at a time
//! where that is glibc's fdlibm `tanhf`; on aarch64 one `tanhf` call per value, which leaves
//! the float32 sequence to the portable loop there).
//!
//! In float32 the tanh argument has two forms, one per [`CubicTerm`]: the ops run one by one
//! (above), or `fma(cube, 0.044715, x) · sqrt(2/π)`, the kernel MLX's CPU JIT builds for the
//! `mx.compile`d graph where its compiler contracts `x + 0.044715·cube` into one fused
//! multiply-add (GCC on aarch64; the cube comes from a separate, unfused `power` kernel, and the
//! rest of the sequence is unchanged). In bf16 every op rounds to bf16, so both forms are one.

use crate::cpu::Isa;
use crate::element::is;
use crate::power::{cube_as_pow_slice, pow};
use crate::tanh::{tanh, tanh_slice_with};
use crate::{ElementType, Error, Float, Result, parallel, rows};
use half::bf16;
use std::sync::OnceLock;

const KERNEL: &str = "gelu_approx";

/// How the float32 GELU forms `x + 0.044715 · cube`, the cubic term of its tanh argument; bf16
/// rounds each op to bf16 under either choice, so its bits do not depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CubicTerm {
    /// `x + round(0.044715 · cube)`: two roundings, MLX's ops run one by one (its CPU JIT off),
    /// and the kernel the JIT builds where its compiler does not contract (x86-64).
    #[default]
    Separate,
    /// `fma(cube, 0.044715, x)`: one rounding, the kernel MLX's CPU JIT builds on aarch64, where
    /// GCC contracts the multiply and the add into one `fmadd`.
    Fused,
}

/// `gelu_approx(x)` for one value of dtype `T`, op by op as MLX computes it (see the module
/// documentation), the float32 cubic term formed as `cubic` says: the definition of the bits
/// of this module's kernels.
pub fn gelu_approx_scalar<T: Float>(cubic: CubicTerm, x: T) -> T {
    let f = x.to_f32();
    gelu_approx_from_cube(cubic, x, pow(f, T::from_f32(3.0).to_f32()))
}

/// The GELU of `x` given `cube = powf(f32(x), 3)`, the rest of the op sequence.
#[inline(always)]
fn gelu_approx_from_cube<T: Float>(cubic: CubicTerm, x: T, cube: f32) -> T {
    gelu_approx_from_tanh(x, tanh(tanh_argument(cubic, x, cube)))
}

/// Each op's result rounded to `T`.
#[inline(always)]
fn round<T: Float>(v: f32) -> f32 {
    T::from_f32(v).to_f32()
}

/// The argument of the GELU's `tanh` given `cube = powf(f32(x), 3)`:
/// `(x + 0.044715 · cube) · sqrt(2/π)`, each op rounded to `T`; in float32 the cubic term
/// formed as `cubic` says.
#[inline(always)]
fn tanh_argument<T: Float>(cubic: CubicTerm, x: T, cube: f32) -> f32 {
    // Python floats become float32 (then T) weak scalars, as MLX makes `array(0.044715, T)`.
    let cubic_coefficient = round::<T>(0.044715f64 as f32);
    let scale = round::<T>((2.0 / std::f64::consts::PI).sqrt() as f32);
    let cube = round::<T>(cube);
    let sum = match (T::DTYPE, cubic) {
        (ElementType::F32, CubicTerm::Fused) => cube.mul_add(cubic_coefficient, x.to_f32()),
        _ => round::<T>(x.to_f32() + round::<T>(cube * cubic_coefficient)),
    };
    round::<T>(sum * scale)
}

/// The GELU of `x` given the C library's `tanh` of its [`tanh_argument`]:
/// `(0.5 · x) · (1 + tanh)`, each op rounded to `T`.
#[inline(always)]
fn gelu_approx_from_tanh<T: Float>(x: T, tanh: f32) -> T {
    let gate = round::<T>(round::<T>(tanh) + round::<T>(1.0));
    T::from_f32(round::<T>(x.to_f32() * round::<T>(0.5)) * gate)
}

/// `out[i] = gelu_approx(x[i])` in `T` (float32 or bf16): MLX 0.32's CPU bits, the float32
/// cubic term formed as `cubic` says. `x` and `out` have one length, else [`Error::Shape`].
pub fn gelu_approx<T: Float>(cubic: CubicTerm, x: &[T], out: &mut [T]) -> Result<()> {
    if x.len() != out.len() {
        return Err(Error::shape(KERNEL, format!("input of {} values, output of {}", x.len(), out.len())));
    }
    let table = bf16_table_for::<T>();
    let isa = crate::cpu::isa();
    parallel::for_row_blocks(out, 1, rows::PARALLEL_MIN_ELEMENTS, |start, block| {
        let x = &x[start..start + block.len()];
        match table {
            Some(table) => {
                for (o, &v) in block.iter_mut().zip(x) {
                    *o = T::from_f32(lookup(table, v));
                }
            }
            None => by_sequence(isa, cubic, x, block, |_, g| g),
        }
    });
    Ok(())
}

/// `out[i] = gelu_approx(gate[i]) * up[i]` in `T` (float32 or bf16), the gated activation of
/// gemma4's vision MLP: MLX 0.32's CPU bits (the product rounded to `T`; bf16 NaNs `0x7FC0`,
/// a float32 NaN's payload is not specified), the float32 cubic term formed as `cubic` says.
/// The three slices have one length, else [`Error::Shape`]. Over all cores; bf16 through a
/// table of the GELU of every bf16 value.
pub fn gelu_approx_mul<T: Float>(cubic: CubicTerm, gate: &[T], up: &[T], out: &mut [T]) -> Result<()> {
    check(gate.len(), up.len(), out.len())?;
    let table = bf16_table_for::<T>();
    let isa = crate::cpu::isa();
    parallel::for_row_blocks(out, 1, rows::PARALLEL_MIN_ELEMENTS, |start, block| {
        let span = start..start + block.len();
        let (gate, up) = (&gate[span.clone()], &up[span]);
        match table {
            Some(table) => gated_by_table(isa, table, gate, up, block),
            None => by_sequence(isa, cubic, gate, block, |i, g| T::from_f32(g.to_f32() * up[i].to_f32())),
        }
    });
    Ok(())
}

/// [`gelu_approx_mul`] by the scalar sequence, one element at a time on this thread (no
/// table): the definition of the bits. Same arguments and errors.
pub fn gelu_approx_mul_scalar<T: Float>(cubic: CubicTerm, gate: &[T], up: &[T], out: &mut [T]) -> Result<()> {
    check(gate.len(), up.len(), out.len())?;
    for ((o, &g), &u) in out.iter_mut().zip(gate).zip(up) {
        *o = T::from_f32(gelu_approx_scalar(cubic, g).to_f32() * u.to_f32());
    }
    Ok(())
}

/// `out[i] = then(i, gelu_approx(x[i]))` by the op sequence, 256 values at a time: the cubes
/// by [`cube_as_pow_slice`] (`powf`'s bits), the `tanh`s by [`tanh_slice`](crate::tanh::tanh_slice) (`tanhf`'s).
fn by_sequence<T: Float>(isa: Isa, cubic: CubicTerm, x: &[T], out: &mut [T], then: impl Fn(usize, T) -> T) {
    const CHUNK: usize = 256;
    let mut widened = [0f32; CHUNK];
    let mut cubes = [0f32; CHUNK];
    let mut tanhs = [0f32; CHUNK];
    for (c, (x, out)) in x.chunks(CHUNK).zip(out.chunks_mut(CHUNK)).enumerate() {
        let n = x.len();
        for (w, v) in widened.iter_mut().zip(x) {
            *w = v.to_f32();
        }
        cube_as_pow_slice(isa, &widened[..n], &mut cubes[..n]);
        for (cube, &v) in cubes.iter_mut().zip(x) {
            *cube = tanh_argument(cubic, v, *cube);
        }
        tanh_slice_with(isa, &cubes[..n], &mut tanhs[..n]);
        for (i, ((o, &v), &t)) in out.iter_mut().zip(x).zip(&tanhs[..n]).enumerate() {
            *o = then(c * CHUNK + i, gelu_approx_from_tanh(v, t));
        }
    }
}

fn check(gate: usize, up: usize, out: usize) -> Result<()> {
    if gate != up || gate != out {
        return Err(Error::shape(KERNEL, format!("gate of {gate} values, up of {up}, output of {out}")));
    }
    Ok(())
}

/// The bf16 GELU of every bf16 value (indexed by its bits; entries are bf16 bits).
type Table = [u16; 1 << 16];

/// The table when `T` is bf16.
fn bf16_table_for<T: Float>() -> Option<&'static Table> {
    is::<T, bf16>().then(bf16_table)
}

fn bf16_table() -> &'static Table {
    static TABLE: OnceLock<Box<Table>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = Box::new([0u16; 1 << 16]);
        for (bits, entry) in (0..=u16::MAX).zip(table.iter_mut()) {
            *entry = gelu_approx_scalar(CubicTerm::Separate, bf16::from_bits(bits)).to_bits();
        }
        table
    })
}

/// The GELU of `x` (a bf16, as `T`) from the table, widened to float32.
#[inline(always)]
fn lookup<T: Float>(table: &Table, x: T) -> f32 {
    // `x` is a bf16 whenever there is a table: its float32 has the bf16 bits on top.
    let bits = (x.to_f32().to_bits() >> 16) as usize;
    f32::from_bits(u32::from(table[bits & 0xFFFF]) << 16)
}

/// `T(table[gate] · up)` over one block (`T` is bf16), by the fastest path the CPU has.
fn gated_by_table<T: Float>(isa: Isa, table: &Table, gate: &[T], up: &[T], out: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = isa.avx2() {
        avx2::gated_by_table(avx2, table, gate, up, out);
        return;
    }
    #[cfg(target_arch = "aarch64")]
    if let Some(neon) = isa.neon() {
        neon::gated_by_table(neon, table, gate, up, out);
        return;
    }
    let _ = isa;
    gated_by_table_portable(table, gate, up, out);
}

fn gated_by_table_portable<T: Float>(table: &Table, gate: &[T], up: &[T], out: &mut [T]) {
    for ((o, &g), &u) in out.iter_mut().zip(gate).zip(up) {
        *o = T::from_f32(lookup(table, g) * u.to_f32());
    }
}

crate::simd::stamp! {
    lanes v for Avx2, Neon;

    /// `LANES` table lookups, then one product and rounding per `LANES` lanes.
    entry fn gated_by_table[T: Float](table: &Table, gate: &[T], up: &[T], out: &mut [T]) {
        let n = gate.len().min(up.len()).min(out.len());
        let mut c = 0;
        while c + v::LANES <= n {
            let gates = &gate[c..c + v::LANES];
            let g: [f32; v::LANES] = std::array::from_fn(|i| lookup(table, gates[i]));
            v::store_at(out, c, v::mul(v::from_array(&g), v::load_at(up, c)));
            c += v::LANES;
        }
        for c in c..n {
            out[c] = T::from_f32(lookup(table, gate[c]) * up[c].to_f32());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{bits, floats};
    use proptest::prelude::*;

    const CUBIC_TERMS: [CubicTerm; 2] = [CubicTerm::Separate, CubicTerm::Fused];

    #[test]
    fn bf16_constants_are_the_weak_scalars() {
        let round = |v: f32| bf16::from_f32(v).to_f32();
        assert_eq!(round(0.044715f64 as f32), 0.044_677_734);
        assert_eq!(round((2.0 / std::f64::consts::PI).sqrt() as f32), 0.796_875);
    }

    #[test]
    fn near_the_exact_gelu() {
        for i in -600..600 {
            let x = i as f32 / 100.0;
            let exact = 0.5
                * f64::from(x)
                * (1.0
                    + ((2.0 / std::f64::consts::PI).sqrt() * (f64::from(x) + 0.044715 * f64::from(x).powi(3))).tanh());
            for cubic in CUBIC_TERMS {
                let got = f64::from(gelu_approx_scalar(cubic, x));
                assert!(
                    (got - exact).abs() < 1e-6 * (1.0 + exact.abs()),
                    "gelu({x}) = {got}, want {exact} ({cubic:?})"
                );
            }
        }
        for cubic in CUBIC_TERMS {
            assert_eq!(gelu_approx_scalar(cubic, f32::INFINITY), f32::INFINITY);
            assert_eq!(gelu_approx_scalar(cubic, -0.0f32).to_bits(), 0x8000_0000);
            assert!(gelu_approx_scalar(cubic, f32::NAN).is_nan());
        }
    }

    #[test]
    fn the_fused_cubic_term_is_one_fma_in_float32_and_nothing_in_bf16() {
        let (c, scale) = (0.044715f64 as f32, (2.0 / std::f64::consts::PI).sqrt() as f32);
        let mut differ = 0;
        for i in -40_000..40_000 {
            let x = i as f32 / 4_000.0 + 1.0 / 3.0;
            let cube = pow(x, 3.0);
            let fused = tanh_argument(CubicTerm::Fused, x, cube);
            assert_eq!(fused.to_bits(), (cube.mul_add(c, x) * scale).to_bits(), "x = {x}");
            let separate = tanh_argument(CubicTerm::Separate, x, cube);
            assert_eq!(separate.to_bits(), ((x + cube * c) * scale).to_bits(), "x = {x}");
            differ += usize::from(fused.to_bits() != separate.to_bits());
        }
        // The choice matters in float32 (for a few percent of these values)...
        assert!(differ > 100, "{differ} values differ");
        // ...and never in bf16, where every op rounds to bf16.
        for bits in 0..=u16::MAX {
            let x = bf16::from_bits(bits);
            let (fused, separate) =
                (gelu_approx_scalar(CubicTerm::Fused, x), gelu_approx_scalar(CubicTerm::Separate, x));
            assert_eq!(fused.to_bits(), separate.to_bits(), "gelu(bf16 {bits:#06x})");
        }
    }

    #[test]
    fn the_table_is_the_scalar_sequence_on_every_bf16() {
        let table = bf16_table();
        for bits in 0..=u16::MAX {
            let x = bf16::from_bits(bits);
            assert_eq!(
                table[usize::from(bits)],
                gelu_approx_scalar(CubicTerm::Separate, x).to_bits(),
                "gelu(bf16 {bits:#06x})"
            );
        }
        let xs: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
        for cubic in CUBIC_TERMS {
            let mut out = vec![bf16::ZERO; xs.len()];
            gelu_approx(cubic, &xs, &mut out).unwrap();
            assert!(xs.iter().zip(&out).all(|(&x, y)| gelu_approx_scalar(cubic, x).to_bits() == y.to_bits()));
        }
    }

    #[test]
    fn rejects_bad_extents() {
        let mut out = [0f32; 4];
        let cubic = CubicTerm::Separate;
        assert!(matches!(gelu_approx_mul(cubic, &[1f32; 4], &[1f32; 3], &mut out), Err(Error::Shape { .. })));
        assert!(matches!(gelu_approx_mul(cubic, &[1f32; 3], &[1f32; 3], &mut out), Err(Error::Shape { .. })));
        assert!(matches!(gelu_approx_mul_scalar(cubic, &[1f32; 3], &[1f32; 3], &mut out), Err(Error::Shape { .. })));
        assert!(matches!(gelu_approx(cubic, &[1f32; 3], &mut out), Err(Error::Shape { .. })));
    }

    fn check_paths<T: Float>(cubic: CubicTerm, gate: &[T], up: &[T]) {
        let mut want = vec![T::default(); gate.len()];
        gelu_approx_mul_scalar(cubic, gate, up, &mut want).unwrap();
        let mut got = vec![T::default(); gate.len()];
        gelu_approx_mul(cubic, gate, up, &mut got).unwrap();
        assert_eq!(bits(&got), bits(&want), "{cubic:?}");
        let mut alone = vec![T::default(); gate.len()];
        gelu_approx(cubic, gate, &mut alone).unwrap();
        let twin: Vec<T> = gate.iter().map(|&g| gelu_approx_scalar(cubic, g)).collect();
        assert_eq!(bits(&alone), bits(&twin), "gelu_approx {cubic:?}");
        if let Some(table) = bf16_table_for::<T>() {
            let mut portable = vec![T::default(); gate.len()];
            gated_by_table_portable(table, gate, up, &mut portable);
            assert_eq!(bits(&portable), bits(&want), "portable");
            #[cfg(target_arch = "x86_64")]
            if let Some(avx2) = crate::cpu::isa().avx2() {
                let mut lanes = vec![T::default(); gate.len()];
                avx2::gated_by_table(avx2, table, gate, up, &mut lanes);
                assert_eq!(bits(&lanes), bits(&want), "avx2");
            }
            #[cfg(target_arch = "aarch64")]
            if let Some(neon) = crate::cpu::isa().neon() {
                let mut lanes = vec![T::default(); gate.len()];
                neon::gated_by_table(neon, table, gate, up, &mut lanes);
                assert_eq!(bits(&lanes), bits(&want), "neon");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn paths_agree(
            pairs in prop::collection::vec((
                floats((6, -8.0..8.0), vec![0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-40, 3e19, -3e19]),
                prop_oneof![4 => -4f32..4.0, 1 => any::<u32>().prop_map(f32::from_bits)],
            ), 0..300),
        ) {
            let (gate, up): (Vec<f32>, Vec<f32>) = pairs.into_iter().unzip();
            let gb: Vec<bf16> = gate.iter().map(|&v| crate::bf16_from_f32(v)).collect();
            let ub: Vec<bf16> = up.iter().map(|&v| crate::bf16_from_f32(v)).collect();
            for cubic in CUBIC_TERMS {
                check_paths(cubic, &gate, &up);
                check_paths(cubic, &gb, &ub);
            }
        }
    }
}

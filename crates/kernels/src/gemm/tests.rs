//! The fast paths against the scalar twin, and the twin against hand-computed cases.

use super::*;
use crate::bf16_from_f32;
use crate::testing::gemm::{Case, cases, specials};
use crate::testing::{same_bits, scaled_floats};
use half::bf16;
use proptest::prelude::*;

/// Values that stress the rules: ordinary ones, and NaN, ±inf, −0, denormals, values whose
/// products overflow or underflow.
fn value() -> impl Strategy<Value = f32> + Clone {
    scaled_floats((12, -4.0..4.0), (2, -30..30), specials())
}

/// Values whose bf16 products are all exact (the micro-kernel may then use FMA).
fn ordinary_value() -> impl Strategy<Value = f32> + Clone {
    scaled_floats((8, -4.0..4.0), (1, -20..20), vec![0.0])
}

fn case_of(values: impl Strategy<Value = f32> + Clone + 'static) -> impl Strategy<Value = Case> {
    cases((1usize..20, 0usize..40, 1usize..40), values, (-3.0..0.0, 0.0..3.0))
}

/// A blocking `(mc, kc, nc)` to run besides the default one.
fn blocking() -> impl Strategy<Value = (usize, usize, usize)> {
    (1usize..20, 1usize..12, 1usize..40)
}

/// Runs `case` with operand dtypes `A`, `B` and output `O` through the twin and through every
/// kernel with the blocking `(mc, kc, nc)` and the default one; all must agree.
fn check<A: Float, B: Float, O: Float>(case: &Case, (mc, kc, nc): (usize, usize, usize)) -> Result<(), TestCaseError> {
    let Case { m, k, n, .. } = *case;
    let (a_data, b_data) = case.operands::<A, B>();
    let (a, b) = (a_data.view(), b_data.view());
    let round = |x: f32| O::from_f32(x).to_f32();
    // Clip bounds in the operand's and output's dtypes, as mlx-vlm's scalars are.
    let a_clip = case.a_clip.map(|(lo, hi)| (A::from_f32(lo).to_f32(), A::from_f32(hi).to_f32()));
    let bias = case.bias::<O>();
    let options = GemmOptions {
        a_clip,
        bias: bias.as_deref(),
        out_clip: case.out_clip.map(|(lo, hi)| (O::from_f32(round(lo)), O::from_f32(round(hi)))),
    };
    let mut expected = vec![O::default(); m * n];
    reference(a, b, &mut expected, &options).unwrap();
    for kernel in MicroKernel::available() {
        for blocking in [Blocking::new(mc, kc, nc), Blocking::for_shape(m, k, n)] {
            let mut out = vec![O::from_f32(7.0); m * n];
            gemm_with(kernel, blocking, a, b, &mut out, &options).unwrap();
            for (i, (&x, &y)) in out.iter().zip(&expected).enumerate() {
                prop_assert!(same_bits(x, y), "{kernel:?} {blocking:?}: out[{i}] = {x:?}, reference {y:?}");
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn float32_matches_the_reference(case in case_of(value()), blocking in blocking()) {
        check::<f32, f32, f32>(&case, blocking)?;
    }

    #[test]
    fn bf16_matches_the_reference(case in case_of(value()), blocking in blocking()) {
        check::<bf16, bf16, bf16>(&case, blocking)?;
    }

    /// Ordinary magnitudes: the AVX2 kernel runs its FMA variant, which must give the same bits.
    #[test]
    fn bf16_with_exact_products_matches_the_reference(case in case_of(ordinary_value()), blocking in blocking()) {
        check::<bf16, bf16, bf16>(&case, blocking)?;
        check::<bf16, bf16, f32>(&case, blocking)?;
    }

    #[test]
    fn mixed_dtypes_match_the_reference(case in case_of(value()), blocking in blocking()) {
        check::<f32, bf16, f32>(&case, blocking)?;
        check::<bf16, f32, f32>(&case, blocking)?;
        check::<f32, f32, bf16>(&case, blocking)?;
    }
}

#[test]
fn the_reference_sums_in_order_with_rounded_products() {
    // 1e8 + 1 rounds back to 1e8 in f32: the order of the sum shows in the result.
    let a = [1e8f32, 1.0, -1e8];
    let b = [1.0f32, 1.0, 1.0];
    let mut out = [0.0f32];
    let (a, b) = (MatRef::row_major(&a, 1, 3).unwrap(), MatRef::row_major(&b, 3, 1).unwrap());
    reference(a, b, &mut out, &GemmOptions::default()).unwrap();
    assert_eq!(out[0], 0.0);
    // Without FMA: (1 + 2^-12)² rounds before the add of −1 − 2^-11; an FMA would keep 2^-24.
    let x = 1.0 + 2f32.powi(-12);
    let a = [x, -1.0 - 2f32.powi(-11)];
    let b = [x, 1.0];
    let (a, b) = (MatRef::row_major(&a, 1, 2).unwrap(), MatRef::row_major(&b, 2, 1).unwrap());
    reference(a, b, &mut out, &GemmOptions::default()).unwrap();
    assert_eq!(out[0], 0.0);
}

#[test]
fn the_float32_bias_goes_after_the_sum_only_for_a_column_contiguous_b() {
    // Products 1e8 then −1e8, bias 1: after the sum 0 + 1 = 1; before it, 1 + 1e8 rounds to 1e8.
    let a = [1e8f32, -1e8];
    let w = [1.0f32, 1.0]; // W [1, 2]: b = W.T is column-contiguous; its copy [2, 1] row-major.
    let bias = [1.0f32];
    let options = GemmOptions { bias: Some(&bias), ..GemmOptions::default() };
    let a = MatRef::row_major(&a, 1, 2).unwrap();
    let transposed = MatRef::row_major(&w, 1, 2).unwrap().t();
    let row_major = MatRef::row_major(&w, 2, 1).unwrap();
    assert_eq!(transposed.mlx_layout(), MlxLayout::ColContiguous);
    assert_eq!(row_major.mlx_layout(), MlxLayout::RowContiguous);
    let mut out = [0.0f32];
    reference(a, transposed, &mut out, &options).unwrap();
    assert_eq!(out[0], 1.0);
    reference(a, row_major, &mut out, &options).unwrap();
    assert_eq!(out[0], 0.0);
    // bf16 adds it after the sum whatever the layout (before it, 1 + 2^25 would round to 2^25).
    let a16: Vec<bf16> = [2f32.powi(25), -2f32.powi(25)].iter().map(|&x| bf16_from_f32(x)).collect();
    let w16 = [bf16_from_f32(1.0); 2];
    let bias16 = [bf16_from_f32(1.0)];
    let options = GemmOptions { bias: Some(&bias16[..]), ..GemmOptions::default() };
    let mut out16 = [bf16::ZERO];
    let a16 = MatRef::row_major(&a16, 1, 2).unwrap();
    reference(a16, MatRef::row_major(&w16, 2, 1).unwrap(), &mut out16, &options).unwrap();
    assert_eq!(out16[0].to_f32(), 1.0);
}

#[test]
fn an_empty_sum_gives_zeros_or_the_bias_copied() {
    let a: [f32; 0] = [];
    let bias = [-0.0f32, 2.5];
    let mut out = [9.0f32; 6];
    let (a, b) = (MatRef::row_major(&a, 3, 0).unwrap(), MatRef::row_major(&a, 0, 2).unwrap());
    gemm(a, b, &mut out, &GemmOptions::default()).unwrap();
    assert!(out.iter().all(|x| x.to_bits() == 0));
    gemm(a, b, &mut out, &GemmOptions { bias: Some(&bias), ..GemmOptions::default() }).unwrap();
    assert_eq!(out.map(f32::to_bits), [0x8000_0000, 2.5f32.to_bits()].repeat(3)[..]);
}

#[test]
fn mismatched_extents_are_errors() {
    let x = [0.0f32; 6];
    let a = MatRef::row_major(&x, 2, 3).unwrap();
    let mut out = [0.0f32; 4];
    assert!(gemm(a, a, &mut out, &GemmOptions::default()).is_err());
    assert!(gemm(a, a.t(), &mut out[..3], &GemmOptions::default()).is_err());
    let bias = [0.0f32; 3];
    assert!(gemm(a, a.t(), &mut out, &GemmOptions { bias: Some(&bias), ..GemmOptions::default() }).is_err());
    assert!(MatRef::row_major(&x, 4, 2).is_err());
    assert!(MatRef::strided(&x, 2, 3, 4, 1).is_err());
    assert!(MatRef::strided(&x, 2, 3, usize::MAX, 1).is_err());
}

#[test]
fn the_bits_do_not_depend_on_the_number_of_threads() {
    let (m, k, n) = (203usize, 300usize, 75usize);
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7919) % 1013) as f32 / 97.0 - 5.0).collect();
    let w: Vec<bf16> = (0..n * k).map(|i| bf16_from_f32(((i * 104_729) % 1009) as f32 / 211.0 - 2.0)).collect();
    let bias: Vec<f32> = (0..n).map(|j| j as f32 * 0.37 - 9.0).collect();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut out = vec![0.0f32; m * n];
        pool.install(|| {
            let a = MatRef::row_major(&a, m, k).unwrap();
            let b = MatRef::row_major(&w, n, k).unwrap().t();
            gemm(a, b, &mut out, &GemmOptions { bias: Some(&bias), ..GemmOptions::default() }).unwrap();
        });
        out.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(5));
}

#[test]
fn a_float32_clip_bound_keeps_bf16_operands_off_the_fma_path() {
    // bf16 `a` clipped to a float32 bound that is not a bf16 value: the clipped elements are
    // that bound, whose products with bf16 weights are not exact, so no FMA may replace the
    // separate multiply and add.
    let (m, k, n) = (6usize, 64usize, 16usize);
    let hi = 1.0 + 2f32.powi(-20);
    let a: Vec<bf16> = (0..m * k).map(|i| bf16_from_f32(if i % 3 == 0 { 4.0 } else { -(i as f32) / 50.0 })).collect();
    let w: Vec<bf16> = (0..n * k).map(|i| bf16_from_f32(1.0 + ((i * 37) % 101) as f32 / 128.0)).collect();
    let (a, b) = (MatRef::row_major(&a, m, k).unwrap(), MatRef::row_major(&w, n, k).unwrap().t());
    let options = GemmOptions { a_clip: Some((-8.0, hi)), ..GemmOptions::default() };
    let mut want = vec![0.0f32; m * n];
    reference(a, b, &mut want, &options).unwrap();
    for kernel in MicroKernel::available() {
        let mut out = vec![0.0f32; m * n];
        gemm_with(kernel, Blocking::for_shape(m, k, n), a, b, &mut out, &options).unwrap();
        assert_eq!(
            out.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            "{kernel:?}"
        );
    }
}

/// `[1, 1 + 2⁻¹²] · [−(1 + 2⁻¹¹), 1 + 2⁻¹²]ᵀ`: the second product, `1 + 2⁻¹¹ + 2⁻²⁴`, rounds to
/// `1 + 2⁻¹¹` on its own (a tie, to even), so the separate rule sums to 0 and the fused rule
/// keeps `2⁻²⁴`. Both rules run here on any target; `gemm` (every kernel) follows the target's.
#[test]
fn each_rule_rounds_a_step_as_it_says() {
    let a = [1.0f32, 1.0 + 2f32.powi(-12)];
    let b = [-(1.0 + 2f32.powi(-11)), 1.0 + 2f32.powi(-12)];
    let (a, b) = (MatRef::row_major(&a, 1, 2).unwrap(), MatRef::row_major(&b, 2, 1).unwrap());
    let run = |f: &dyn Fn(&mut [f32; 1])| {
        let mut out = [f32::NAN];
        f(&mut out);
        out[0]
    };
    let options = GemmOptions::default();
    let separate = run(&|out| reference_with::<Separate, f32, f32, f32>(a, b, out, &options).unwrap());
    let fused = run(&|out| reference_with::<Fused, f32, f32, f32>(a, b, out, &options).unwrap());
    assert_eq!((separate, fused), (0.0, 2f32.powi(-24)));
    let target = TargetMultiplyAdd::mul_add(b.at(1, 0), a.at(0, 1), b.at(0, 0));
    assert_eq!(target, if cfg!(target_arch = "aarch64") { fused } else { separate });
    for kernel in MicroKernel::available() {
        let got = run(&|out| gemm_with(kernel, Blocking::for_shape(1, 2, 1), a, b, out, &options).unwrap());
        assert_eq!(got.to_bits(), target.to_bits(), "{kernel:?}");
    }
}

/// The portable tile under the fused rule (the kernel aarch64 runs), on this target: the
/// fused reference's bits over random panels.
#[test]
fn the_portable_tile_under_the_fused_rule_is_the_fused_reference() {
    use super::microkernel::portable::tile_slices;
    use super::tile::{MR, NR, TILE};
    let kc = 300;
    let a: Vec<f32> = (0..kc * MR).map(|i| ((i * 7919) % 1013) as f32 / 97.0 - 5.0).collect();
    let b: Vec<f32> = (0..kc * NR).map(|i| ((i * 104_729) % 2029) as f32 / 331.0 - 3.0).collect();
    let start: [f32; TILE] = std::array::from_fn(|i| i as f32 * 0.37 - 9.0);
    let mut tile = start;
    tile_slices::<Fused>(&a, &b, &mut tile, true);
    // The same sums through the reference: row i of `a` (k-major panel) times column j of `b`,
    // the tile's start as addmm's addend before the sum (a row-contiguous `b`).
    let a_rows: Vec<f32> = (0..MR).flat_map(|i| (0..kc).map(move |p| (i, p))).map(|(i, p)| a[p * MR + i]).collect();
    let b_view = MatRef::row_major(&b, kc, NR).unwrap();
    let (mut want, mut separate) = ([0.0f32; TILE], [0.0f32; TILE]);
    for (i, (want, separate)) in want.chunks_exact_mut(NR).zip(separate.chunks_exact_mut(NR)).enumerate() {
        let bias = &start[i * NR..(i + 1) * NR];
        let row = MatRef::row_major(&a_rows[i * kc..(i + 1) * kc], 1, kc).unwrap();
        let options = GemmOptions { bias: Some(bias), ..GemmOptions::default() };
        reference_with::<Fused, f32, f32, f32>(row, b_view, want, &options).unwrap();
        reference_with::<Separate, f32, f32, f32>(row, b_view, separate, &options).unwrap();
    }
    assert_eq!(tile.map(f32::to_bits), want.map(f32::to_bits));
    assert_ne!(want.map(f32::to_bits), separate.map(f32::to_bits), "the inputs tell the rules apart");
}

#[test]
fn the_detected_micro_kernel_is_the_resolved_instruction_set_s_and_the_last_available() {
    let isa = crate::cpu::isa();
    assert_eq!(MicroKernel::detect(), MicroKernel::of(isa));
    assert_eq!(MicroKernel::available().last(), Some(&MicroKernel::of(isa)));
    assert_eq!(MicroKernel::of(crate::cpu::Isa::Portable), MicroKernel::Portable);
}

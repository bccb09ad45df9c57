//! `kernels::tanh` against MLX's own float32 `tanh` (stock CPU build), bit for bit: a sweep of
//! float32 bit patterns over every exponent (NaNs, infinities and denormals among them), the
//! values next to each branch threshold of `tanhf`, every tail length, and random slices.

use kernels::tanh::{fdlibm_tanhf, tanh, tanh_slice};
use proptest::prelude::*;
use tensor::Array;

fn mlx_tanh(xs: &[f32]) -> Vec<u32> {
    let out = Array::from_slice(xs, &[xs.len() as i32]).unwrap().tanh().unwrap();
    out.to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect()
}

fn kernel_tanh(xs: &[f32]) -> Vec<u32> {
    let mut out = vec![0f32; xs.len()];
    tanh_slice(xs, &mut out);
    out.iter().map(|v| v.to_bits()).collect()
}

fn assert_same(xs: &[f32]) {
    let (want, got) = (mlx_tanh(xs), kernel_tanh(xs));
    for ((x, w), g) in xs.iter().zip(&want).zip(&got) {
        assert_eq!(g, w, "tanh({x:e}) [{:#010x}]: kernel {g:#010x}, MLX {w:#010x}", x.to_bits());
        assert_eq!(tanh(*x).to_bits(), *w, "the C library's tanhf at {x:e}");
    }
}

#[test]
fn a_sweep_of_every_exponent_is_mlx_tanh() {
    // Every 1009th bit pattern: ≈ 4.3 M values, both signs of every binade.
    let xs: Vec<f32> = (0..=u32::MAX / 1009).map(|i| f32::from_bits(i * 1009)).collect();
    assert_same(&xs);
}

#[test]
fn the_branch_thresholds_are_mlx_tanh() {
    // 2⁻⁵⁵, 2⁻²⁶, ln 2 / 4, 3·ln 2 / 4, 1, 27·ln 2 / 2, 22, ∞ (see `kernels::tanh`).
    let thresholds = [0x2400_0000u32, 0x3280_0000, 0x3e31_7218, 0x3f05_1592, 0x3f80_0000, 0x4115_b844, 0x41b0_0000];
    let xs: Vec<f32> = thresholds
        .iter()
        .flat_map(|&t| (t - 300..t + 300).flat_map(|b| [b, b | 0x8000_0000]))
        .chain([0x7f80_0000, 0xff80_0000, 0x7fc0_0000, 0xffa0_0001, 0, 0x8000_0000, 1, 0x8000_0001])
        .map(f32::from_bits)
        .collect();
    assert_same(&xs);
}

#[test]
fn every_tail_length_is_mlx_tanh() {
    for n in 0..=17 {
        let xs: Vec<f32> = (0..n).map(|i| (i as f32 - 8.0) * 0.37).collect();
        assert_same(&xs);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_slices_are_mlx_tanh(
        xs in prop::collection::vec(prop_oneof![4 => -30f32..30.0, 1 => any::<u32>().prop_map(f32::from_bits)], 0..500),
    ) {
        assert_same(&xs);
        for &x in &xs {
            prop_assert_eq!(fdlibm_tanhf(x).to_bits(), tanh(x).to_bits(), "the scalar twin at {:e}", x);
        }
    }
}

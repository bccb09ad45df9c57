//! `kernels::exp` against MLX's own `exp` (stock CPU build), bit for bit: every bf16 value,
//! a sweep of float32 bit patterns with NaN payloads, infinities, denormals and the ±88 cuts,
//! and random slices.

use half::bf16;
use kernels::exp::{exp, exp_in_place, exp_slice};
use proptest::prelude::*;
use tensor::Array;

fn mlx_exp_f32(xs: &[f32]) -> Vec<u32> {
    let out = Array::from_slice(xs, &[xs.len() as i32]).unwrap().exp().unwrap();
    out.to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect()
}

fn kernel_exp_f32(xs: &[f32]) -> Vec<u32> {
    let mut out = xs.to_vec();
    exp_in_place(&mut out);
    out.iter().map(|v| v.to_bits()).collect()
}

fn special_values() -> Vec<f32> {
    let mut xs = vec![
        0.0,
        -0.0,
        88.0,
        -88.0,
        88.000_01,
        -88.000_01,
        -87.6,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::from_bits(0x8000_0001),
        f32::NAN,
        f32::from_bits(0xFFC1_2345),
        f32::from_bits(0x7FA0_0001),
    ];
    // Around every y = x·log2(e) = k + 1/2, where the rounding of the exponent decides.
    for k in -128..=128 {
        let x = (k as f32 + 0.5) / std::f32::consts::LOG2_E;
        xs.extend((0..9).map(|d| f32::from_bits(x.to_bits().wrapping_add(d).wrapping_sub(4))));
    }
    xs
}

#[test]
fn every_bf16_value_matches_mlx() {
    let xs: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
    let want = Array::from_slice(&xs, &[xs.len() as i32]).unwrap().exp().unwrap().to_vec::<bf16>().unwrap();
    let mut got = vec![bf16::ZERO; xs.len()];
    exp_slice(&xs, &mut got).unwrap();
    for ((x, g), w) in xs.iter().zip(&got).zip(&want) {
        assert_eq!(g.to_bits(), w.to_bits(), "exp(bf16 {:#06x})", x.to_bits());
    }
}

#[test]
fn special_values_and_a_bit_pattern_sweep_match_mlx() {
    let mut xs = special_values();
    xs.extend((0..u32::MAX / 4099).map(|i| f32::from_bits(i * 4099)));
    let (want, got) = (mlx_exp_f32(&xs), kernel_exp_f32(&xs));
    for ((x, g), w) in xs.iter().zip(&got).zip(&want) {
        assert_eq!(g, w, "exp({x:e}) (bits {:#010x})", x.to_bits());
    }
    // The scalar twin too.
    for (x, w) in xs.iter().zip(&want) {
        assert_eq!(exp(*x).to_bits(), *w, "scalar exp({x:e})");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_slices_match_mlx(
        xs in prop::collection::vec(
            prop_oneof![
                any::<u32>().prop_map(f32::from_bits),
                -90f32..90.0,
                prop::sample::select(special_values()),
            ],
            1..2000,
        )
    ) {
        prop_assert_eq!(kernel_exp_f32(&xs), mlx_exp_f32(&xs));
    }
}

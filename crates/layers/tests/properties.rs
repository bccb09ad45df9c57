//! Properties of the blocks on random inputs: RoPE tables (2-D and 1-D) and the 2-D rotation
//! against a direct computation, rotate-half, and the scale invariance of the norms.

extern crate gemma_vision_layers as layers;

use layers::{Execution, LayerNorm, RmsNorm, RopeTables, VisionRmsNorm, rotate_half};
use proptest::prelude::*;
use tensor::{Array, Dtype, SharedArray};

/// A norm under test, as a function of its input.
type Norm<'a> = Box<dyn Fn(&Array) -> Array + 'a>;

fn grid_positions(rows: i32, cols: i32) -> Array {
    let ids: Vec<i32> = (0..rows * cols).flat_map(|n| [n % cols, n / cols]).collect();
    Array::from_slice(&ids, &[1, rows * cols, 2]).unwrap()
}

fn array(values: &[f32], shape: &[i32]) -> Array {
    Array::from_slice(values, shape).unwrap()
}

fn host(a: &Array) -> Vec<f32> {
    a.astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap()
}

fn bits(a: &Array) -> Vec<u8> {
    a.with_bytes(<[u8]>::to_vec).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// For a random patch grid, the tables of partition d hold cos/sin(pos_d / θ^(2j/c)) for
    /// j < c/2, duplicated into both halves, in (1, L, 1, c); the tables of another dtype are the
    /// float32 ones cast.
    #[test]
    fn rope_tables_match_a_direct_computation(
        rows in 1i32..9,
        cols in 1i32..9,
        head_dim in prop::sample::select(vec![8, 16, 32, 64, 72]),
        theta in prop::sample::select(vec![100.0f64, 10_000.0]),
    ) {
        let positions = grid_positions(rows, cols);
        let tables = RopeTables::new(&positions, head_dim, theta, Dtype::F32).unwrap();
        let low = RopeTables::new(&positions, head_dim, theta, Dtype::Bf16).unwrap();
        let channels = head_dim / 2;
        let half = channels / 2;
        let tokens = (rows * cols) as usize;
        for d in 0..2usize {
            let (cos, sin) = (tables.cos(d).unwrap(), tables.sin(d).unwrap());
            prop_assert_eq!(cos.shape(), vec![1, rows * cols, 1, channels]);
            let (cos, sin) = (host(cos), host(sin));
            for t in 0..tokens {
                let position = if d == 0 { t as i32 % cols } else { t as i32 / cols };
                for j in 0..half as usize {
                    let angle = f64::from(position) / theta.powf(2.0 * j as f64 / f64::from(channels));
                    let at = t * channels as usize + j;
                    prop_assert!((f64::from(cos[at]) - angle.cos()).abs() < 2e-6, "cos {} vs {}", cos[at], angle.cos());
                    prop_assert!((f64::from(sin[at]) - angle.sin()).abs() < 2e-6, "sin {} vs {}", sin[at], angle.sin());
                    prop_assert_eq!(cos[at].to_bits(), cos[at + half as usize].to_bits());
                    prop_assert_eq!(sin[at].to_bits(), sin[at + half as usize].to_bits());
                }
            }
            let cast = tables.cos(d).unwrap().astype(Dtype::Bf16).unwrap();
            prop_assert_eq!(bits(low.cos(d).unwrap()), bits(&cast));
        }
    }

    /// The 1-D fallback (positions `[B, L]`): one table over the whole head, cos/sin(pos / θ^(2j/D))
    /// for j < D/2 duplicated into both halves, in (B, L, 1, D).
    #[test]
    fn rope_1d_tables_match_a_direct_computation(
        positions in prop::collection::vec(0i32..64, 1..24),
        head_dim in prop::sample::select(vec![2, 8, 16, 64, 72]),
        theta in prop::sample::select(vec![100.0f64, 10_000.0]),
    ) {
        let tokens = positions.len();
        let ids = Array::from_slice(&positions, &[1, tokens as i32]).unwrap();
        let tables = RopeTables::new(&ids, head_dim, theta, Dtype::F32).unwrap();
        prop_assert!(tables.cos(1).is_none(), "the 1-D fallback has a single partition");
        let (cos, sin) = (tables.cos(0).unwrap(), tables.sin(0).unwrap());
        prop_assert_eq!(cos.shape(), vec![1, tokens as i32, 1, head_dim]);
        let (cos, sin) = (host(cos), host(sin));
        let half = (head_dim / 2) as usize;
        for (t, &position) in positions.iter().enumerate() {
            for j in 0..half {
                let angle = f64::from(position) / theta.powf(2.0 * j as f64 / f64::from(head_dim));
                // The f32 angle carries a relative rounding error of a few ulps.
                let tolerance = 2e-6 + 4e-7 * angle;
                let at = t * head_dim as usize + j;
                let (c, s) = (f64::from(cos[at]), f64::from(sin[at]));
                prop_assert!((c - angle.cos()).abs() < tolerance, "cos {c} vs {}", angle.cos());
                prop_assert!((s - angle.sin()).abs() < tolerance, "sin {s} vs {}", angle.sin());
                prop_assert_eq!(cos[at].to_bits(), cos[at + half].to_bits());
                prop_assert_eq!(sin[at].to_bits(), sin[at + half].to_bits());
            }
        }
    }

    /// Applying 2-D RoPE to random heads equals the rotation computed directly on the host: in
    /// partition d (channels [d·c, (d+1)·c), c = D/2) channel j is `u_j cos a - u_{j+c/2} sin a`
    /// (first half) or `u_j cos a + u_{j-c/2} sin a` (second half), with a = pos_d / θ^(2(j mod c/2)/c):
    /// rotate-half pairs channels within a partition, never across partitions.
    #[test]
    fn rope_2d_apply_matches_a_direct_rotation(
        rows in 1i32..5,
        cols in 1i32..5,
        heads in 1i32..3,
        head_dim in prop::sample::select(vec![4, 8, 16, 24, 72]),
        seed in any::<u64>(),
    ) {
        let tokens = rows * cols;
        let n = (tokens * heads * head_dim) as usize;
        let mut state = seed | 1;
        let values: Vec<f32> = (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect();
        let x = array(&values, &[1, tokens, heads, head_dim]);
        let theta = 100.0f64;
        let tables = RopeTables::new(&grid_positions(rows, cols), head_dim, theta, Dtype::F32).unwrap();
        let rotated = host(&tables.apply(&x).unwrap());
        let (d_model, c) = (head_dim as usize, head_dim as usize / 2);
        let half = c / 2;
        for t in 0..tokens as usize {
            let position = [t as i32 % cols, t as i32 / cols];
            for h in 0..heads as usize {
                let head = (t * heads as usize + h) * d_model;
                for d in 0..2 {
                    for j in 0..c {
                        let u = |k: usize| f64::from(values[head + d * c + k]);
                        let angle = f64::from(position[d]) / theta.powf(2.0 * (j % half) as f64 / c as f64);
                        let partner = if j < half { -u(j + half) } else { u(j - half) };
                        let expected = u(j) * angle.cos() + partner * angle.sin();
                        let got = f64::from(rotated[head + d * c + j]);
                        let at = format!("token {t} head {h} partition {d} channel {j}");
                        prop_assert!((got - expected).abs() < 1e-5, "{at}: {got} vs {expected}");
                    }
                }
            }
        }
    }

    /// rotate_half(rotate_half(x)) == -x, bit for bit.
    #[test]
    fn rotate_half_twice_is_negation(
        values in prop::collection::vec(-1e3f32..1e3, 1..8).prop_flat_map(|row| {
            let n = row.len();
            prop::collection::vec(-1e3f32..1e3, 2 * n * 3).prop_map(move |v| (v, n))
        }),
    ) {
        let (values, half) = values;
        let x = array(&values, &[3, 2 * half as i32]);
        for dtype in [Dtype::F32, Dtype::Bf16] {
            let x = x.astype(dtype).unwrap();
            let twice = rotate_half(&rotate_half(&x).unwrap()).unwrap();
            prop_assert_eq!(bits(&twice), bits(&x.neg().unwrap()));
        }
    }

    /// At position 0 every rotation is the identity (cos 1, sin 0).
    #[test]
    fn rope_at_the_origin_is_the_identity(values in prop::collection::vec(0.01f32..100.0, 2 * 3 * 16)) {
        let positions = Array::zeros(&[1, 2, 2], Dtype::I32).unwrap();
        let x = array(&values, &[1, 2, 3, 16]);
        let tables = RopeTables::new(&positions, 16, 100.0, Dtype::F32).unwrap();
        prop_assert_eq!(bits(&tables.apply(&x).unwrap()), bits(&x));
    }

    /// The RMS norms are invariant to a positive scale of their input (up to eps and rounding),
    /// and the parameter-free ones produce unit root-mean-square rows.
    #[test]
    fn rms_norms_are_scale_invariant(
        values in prop::collection::vec(-4.0f32..4.0, 4 * 32),
        scale in 0.5f32..20.0,
    ) {
        // Mean square ≥ 1 and scale ≥ 0.5 keep eps (1e-6) below a 2e-6 relative effect.
        prop_assume!(values.chunks(32).all(|row| row.iter().map(|v| v * v).sum::<f32>() > 32.0));
        let x = array(&values, &[1, 4, 32]);
        let scaled = x.mul(scale).unwrap();
        let weight = SharedArray::new(array(&[0.5; 32], &[32])).unwrap();
        let norms: [(&str, Norm<'_>); 4] = [
            ("fused", Box::new(|a| RmsNorm::new(weight.clone(), 1e-6, Execution::Mlx).forward(a).unwrap())),
            ("fused no-scale", Box::new(|a| RmsNorm::no_scale(1e-6, Execution::Mlx).forward(a).unwrap())),
            ("vision", Box::new(|a| VisionRmsNorm::new(weight.clone(), Execution::Mlx).forward(a).unwrap())),
            ("vision no-scale", Box::new(|a| VisionRmsNorm::no_scale(Execution::Mlx).forward(a).unwrap())),
        ];
        for (name, norm) in &norms {
            let (a, b) = (host(&norm(&x)), host(&norm(&scaled)));
            for (p, q) in a.iter().zip(&b) {
                prop_assert!((p - q).abs() <= 1e-5 * (1.0 + p.abs()), "{name}: {p} vs {q}");
            }
        }
        for unit in [RmsNorm::no_scale(1e-6, Execution::Mlx).forward(&x).unwrap(), VisionRmsNorm::no_scale(Execution::Mlx).forward(&x).unwrap()] {
            for row in host(&unit).chunks(32) {
                let ms = row.iter().map(|v| v * v).sum::<f32>() / 32.0;
                prop_assert!((ms - 1.0).abs() < 1e-4, "mean square {ms}");
            }
        }
    }

    /// Layer norm is invariant to a positive scale and a shift of its input.
    #[test]
    fn layer_norm_is_affine_invariant(
        values in prop::collection::vec(-4.0f32..4.0, 3 * 24),
        scale in 0.1f32..10.0,
        shift in -5.0f32..5.0,
    ) {
        prop_assume!(values.chunks(24).all(|row| {
            let mean = row.iter().sum::<f32>() / 24.0;
            row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() > 2.0
        }));
        let x = array(&values, &[3, 24]);
        let moved = x.mul(scale).unwrap().add(shift).unwrap();
        let norm = LayerNorm::new(
            SharedArray::new(array(&[1.0; 24], &[24])).unwrap(),
            SharedArray::new(array(&[0.0; 24], &[24])).unwrap(),
            1e-5,
            Execution::Mlx,
        );
        let (a, b) = (host(&norm.forward(&x).unwrap()), host(&norm.forward(&moved).unwrap()));
        for (p, q) in a.iter().zip(&b) {
            prop_assert!((p - q).abs() <= 1e-4 * (1.0 + p.abs()), "{p} vs {q}");
        }
    }
}

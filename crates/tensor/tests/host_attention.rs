//! `tensor::host::attention` against attention computed directly in double precision, over
//! shapes that cover several query blocks and batches, grouped-query heads, every mask
//! broadcast, and more or fewer keys than queries.

use proptest::prelude::*;
use tensor::Error;
use tensor::host::{AttentionMask, AttentionShape, attention};

/// Token-major `[b, l, h, d]` index.
fn at(shape: &AttentionShape, heads: usize, len: usize, b: usize, t: usize, h: usize) -> usize {
    ((b * len + t) * heads + h) * shape.head_dim
}

fn reference(
    s: &AttentionShape,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    scale: f32,
    mask: Option<AttentionMask<'_>>,
) -> Vec<f64> {
    let d = s.head_dim;
    let group = s.query_heads / s.kv_heads;
    let mut out = vec![0f64; q.len()];
    for b in 0..s.batch {
        for h in 0..s.query_heads {
            for t in 0..s.queries {
                let qi = at(s, s.query_heads, s.queries, b, t, h);
                let logits: Vec<f64> = (0..s.keys)
                    .map(|j| {
                        let kj = at(s, s.kv_heads, s.keys, b, j, h / group);
                        let dot: f64 = (0..d).map(|c| q[qi + c] as f64 * k[kj + c] as f64).sum();
                        let m = mask.map_or(0.0, |m| {
                            m.values[(((b % m.batch) * m.heads + h % m.heads) * m.rows + t % m.rows) * s.keys + j]
                                as f64
                        });
                        scale as f64 * dot + m
                    })
                    .collect();
                let max = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let weights: Vec<f64> = logits.iter().map(|x| (x - max).exp()).collect();
                let total: f64 = weights.iter().sum();
                for (j, w) in weights.iter().enumerate() {
                    let vj = at(s, s.kv_heads, s.keys, b, j, h / group);
                    for c in 0..d {
                        out[qi + c] += w / total * v[vj + c] as f64;
                    }
                }
            }
        }
    }
    out
}

fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn matches_direct_attention(
        batch in 1usize..3,
        kv_heads in 1usize..3,
        group in 1usize..3,
        queries in 1usize..220,
        keys in 1usize..160,
        head_dim in prop::sample::select(vec![1usize, 8, 16, 72]),
        mask_kind in 0usize..4,
        seed in any::<u64>(),
    ) {
        let shape = AttentionShape { batch, query_heads: kv_heads * group, kv_heads, queries, keys, head_dim };
        let q = values(batch * queries * shape.query_heads * head_dim, seed);
        let k = values(batch * keys * kv_heads * head_dim, seed ^ 1);
        let v = values(batch * keys * kv_heads * head_dim, seed ^ 2);
        // none; one row for everything; per batch and row; per head
        let (mb, mh, ml) = [(0, 0, 0), (1, 1, 1), (batch, 1, queries), (1, shape.query_heads, 1)][mask_kind];
        // About a fifth of the keys hidden (−1e9), but never key `r % keys` of mask row `r`: a
        // row hidden everywhere by a finite mask has float32 scores all equal to −1e9 (its spacing
        // there is 64), so it averages the values where the double-precision reference does not.
        let mask_values: Vec<f32> = values(mb * mh * ml * keys, seed ^ 3)
            .iter()
            .enumerate()
            .map(|(i, x)| if *x < -0.6 && i % keys != i / keys % keys { -1e9 } else { *x })
            .collect();
        let mask = (mask_kind > 0).then_some(AttentionMask { values: &mask_values, batch: mb, heads: mh, rows: ml });
        let mut out = vec![0f32; q.len()];
        attention(shape, &q, &k, &v, 0.3, mask, &mut out).unwrap();
        let expected = reference(&shape, &q, &k, &v, 0.3, mask);
        for (i, (&o, &e)) in out.iter().zip(&expected).enumerate() {
            prop_assert!((o as f64 - e).abs() <= 2e-6 * (1.0 + e.abs()), "{shape:?} mask {mask_kind}, element {i}: {o} vs {e}");
        }
    }
}

#[test]
fn mismatched_buffers_and_masks_are_shape_errors() {
    let shape = AttentionShape { batch: 1, query_heads: 2, kv_heads: 1, queries: 3, keys: 4, head_dim: 2 };
    let (q, kv) = (vec![0.5f32; 12], vec![0.25f32; 8]);
    let mut out = vec![7f32; 12];
    let bad_mask = [0f32; 5];
    let bad_shapes = [
        (AttentionShape { kv_heads: 0, ..shape }, None),
        (AttentionShape { query_heads: 3, ..shape }, None),
        (AttentionShape { queries: 4, ..shape }, None),
        (AttentionShape { batch: usize::MAX, ..shape }, None),
        (shape, Some(AttentionMask { values: &bad_mask, batch: 1, heads: 1, rows: 1 })),
        (shape, Some(AttentionMask { values: &bad_mask, batch: 2, heads: 1, rows: 1 })),
    ];
    for (s, mask) in bad_shapes {
        let result = attention(s, &q, &kv, &kv, 1.0, mask, &mut out);
        assert!(matches!(result, Err(Error::Shape { op: "host.attention", .. })), "{s:?}: {result:?}");
        assert_eq!(out, vec![7f32; 12], "nothing written");
    }
    attention(shape, &q, &kv, &kv, 1.0, None, &mut out).unwrap();
    assert!(out.iter().all(|&x| (x - 0.25).abs() < 1e-7), "uniform keys average the values: {out:?}");
}

#[test]
fn long_rows_of_partly_hidden_keys() {
    // More keys than the property test draws, a head dimension that is not a multiple of 16,
    // and a mask per row that hides some keys entirely (−∞).
    let shape = AttentionShape { batch: 1, query_heads: 2, kv_heads: 1, queries: 53, keys: 700, head_dim: 72 };
    let q = values(53 * 2 * 72, 11);
    let k = values(700 * 72, 12);
    let v = values(700 * 72, 13);
    let mask_values: Vec<f32> =
        values(53 * 700, 14).iter().map(|x| if *x < -0.9 { f32::NEG_INFINITY } else { *x }).collect();
    let mask = AttentionMask { values: &mask_values, batch: 1, heads: 1, rows: 53 };
    let mut out = vec![0f32; q.len()];
    attention(shape, &q, &k, &v, 0.7, Some(mask), &mut out).unwrap();
    let expected = reference(&shape, &q, &k, &v, 0.7, Some(mask));
    for (i, (&o, &e)) in out.iter().zip(&expected).enumerate() {
        assert!((o as f64 - e).abs() <= 2e-6 * (1.0 + e.abs()), "element {i}: {o} vs {e}");
    }
}

#[test]
fn a_row_masked_everywhere_is_nan() {
    let shape = AttentionShape { batch: 1, query_heads: 1, kv_heads: 1, queries: 2, keys: 20, head_dim: 8 };
    let (q, kv) = (values(16, 1), values(160, 2));
    let mut mask_values = vec![0f32; 40];
    mask_values[..20].fill(f32::NEG_INFINITY);
    let mask = AttentionMask { values: &mask_values, batch: 1, heads: 1, rows: 2 };
    let mut out = vec![0f32; 16];
    attention(shape, &q, &kv, &kv, 1.0, Some(mask), &mut out).unwrap();
    assert!(out[..8].iter().all(|x| x.is_nan()), "fully masked row: {:?}", &out[..8]);
    assert!(out[8..].iter().all(|x| x.is_finite()), "open row: {:?}", &out[8..]);
    // Hidden everywhere by a finite mask instead, the row's float32 scores all round to −1e9:
    // its weights are equal and it averages the values, as any float32 softmax does.
    mask_values[..20].fill(-1e9);
    let mask = AttentionMask { values: &mask_values, batch: 1, heads: 1, rows: 2 };
    attention(shape, &q, &kv, &kv, 1.0, Some(mask), &mut out).unwrap();
    for c in 0..8 {
        let mean = (0..20).map(|j| kv[j * 8 + c] as f64).sum::<f64>() / 20.0;
        assert!((out[c] as f64 - mean).abs() < 1e-6, "channel {c}: {} vs {mean}", out[c]);
    }
}

#[test]
fn an_odd_batch_of_several_query_blocks() {
    // Three images of 300 queries: more than one block of rows each, split into equal blocks
    // so that the item count is a multiple of the cores.
    let shape = AttentionShape { batch: 3, query_heads: 2, kv_heads: 2, queries: 300, keys: 300, head_dim: 8 };
    let n = 3 * 300 * 2 * 8;
    let (q, k, v) = (values(n, 21), values(n, 22), values(n, 23));
    let mut out = vec![f32::NAN; n];
    attention(shape, &q, &k, &v, 0.35, None, &mut out).unwrap();
    let expected = reference(&shape, &q, &k, &v, 0.35, None);
    for (i, (&o, &e)) in out.iter().zip(&expected).enumerate() {
        assert!((o as f64 - e).abs() <= 2e-6 * (1.0 + e.abs()), "element {i}: {o} vs {e}");
    }
}

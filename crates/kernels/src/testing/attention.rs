//! Random attentions for the tests of [`attention`](crate::attention::attention): shapes with
//! grouped-query heads, token-major inputs, a scale, and additive masks broadcast over the
//! batch and the heads or not.

use crate::Float;
use crate::attention::{AttentionInputs, AttentionShape, MaskRef};
use proptest::prelude::*;
use std::ops::Range;

/// One attention: its shape, inputs (token-major, as [`AttentionShape`] lays them out) in `T`,
/// scale and optional mask with its batch and head extents (each 1 or full).
#[derive(Debug, Clone)]
pub struct Case<T = f32> {
    pub shape: AttentionShape,
    pub q: Vec<T>,
    pub k: Vec<T>,
    pub v: Vec<T>,
    pub scale: f32,
    pub mask: Option<(usize, usize, Vec<T>)>,
}

impl Case {
    /// The case with its values in `T`.
    pub fn typed<T: Float>(&self) -> Case<T> {
        Case {
            shape: self.shape,
            q: super::cast(&self.q),
            k: super::cast(&self.k),
            v: super::cast(&self.v),
            scale: self.scale,
            mask: self.mask.as_ref().map(|(batch, heads, values)| (*batch, *heads, super::cast(values))),
        }
    }
}

impl<T: Float> Case<T> {
    /// The inputs of [`attention`](crate::attention::attention).
    pub fn inputs(&self) -> AttentionInputs<'_, T> {
        let mask = self.mask.as_ref().map(|(batch, heads, data)| MaskRef::new(data, *batch, *heads));
        AttentionInputs { shape: self.shape, q: &self.q, k: &self.k, v: &self.v, scale: self.scale, mask }
    }
}

/// Attentions of `dims` `(batch, kv_heads, group, queries, keys, head_dim)` (`kv_heads · group`
/// query heads), inputs from `values`, scale 1 or from `scales`, and some of the time a mask of
/// zeros (weight `zeros`), `-1e4` (2), `values` (1) and `−∞` (1).
pub fn cases<S: Strategy<Value = f32> + Clone + 'static>(
    dims: impl Strategy<Value = (usize, usize, usize, usize, usize, usize)>,
    values: S,
    zeros: u32,
    scales: Range<f32>,
) -> impl Strategy<Value = Case> {
    (dims, any::<(bool, bool, bool)>())
        .prop_flat_map(move |((batch, kv_heads, group, queries, keys, head_dim), (masked, mask_batch, mask_heads))| {
            let query_heads = kv_heads * group;
            let shape = AttentionShape { batch, query_heads, kv_heads, queries, keys, head_dim };
            let (mb, mh) = (if mask_batch { batch } else { 1 }, if mask_heads { query_heads } else { 1 });
            let mask = prop::collection::vec(
                prop_oneof![zeros => Just(0.0f32), 2 => Just(-1e4f32), 1 => values.clone(), 1 => Just(f32::NEG_INFINITY)],
                mb * mh * queries * keys,
            )
            .prop_map(move |values| (mb, mh, values));
            (
                Just(shape),
                prop::collection::vec(values.clone(), batch * queries * query_heads * head_dim),
                prop::collection::vec(values.clone(), batch * keys * kv_heads * head_dim),
                prop::collection::vec(values.clone(), batch * keys * kv_heads * head_dim),
                prop_oneof![Just(1.0f32), scales.clone()],
                if masked { prop::option::of(mask).boxed() } else { Just(None).boxed() },
            )
        })
        .prop_map(|(shape, q, k, v, scale, mask)| Case { shape, q, k, v, scale, mask })
}

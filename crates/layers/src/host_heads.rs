//! Attention heads prepared on the host for the float32 fast path: the q/k/v RMS norms and
//! the rotary embedding, over every core.

use crate::rope::HostRope;
use tensor::host::{for_row_chunks, rms_norm_row};

/// How one projection's heads are prepared: RMS-normalised with `eps` (times `weight` when
/// given, `head_dim` values), then rotated by `rope` when given.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeadPrep<'a> {
    pub(crate) weight: Option<&'a [f32]>,
    pub(crate) eps: f32,
    pub(crate) rope: Option<&'a HostRope>,
}

/// Prepares token-major float32 heads `x` `[batch · len, heads, head_dim]` (tokens in
/// `(batch, position)` order) into `out` (same layout): for each head row `u`,
/// `y = u · (mean(u²) + eps)^(−1/2) · weight`, then per position axis `a` the slice
/// `y_a = y[a·c .. (a+1)·c]` (c = the tables' channels) becomes
/// `y_a · cos_a + rotate_half(y_a) · sin_a` with the tables of the row's token. The same
/// float32 arithmetic as the reference's `fast.rms_norm` and RoPE, in another summation order
/// for the mean.
///
/// `rope`'s tables must cover `len` positions and the batch (1 or `batch`), and `weight`
/// `head_dim` values; both are the caller's invariants (checked when the tables are built).
pub(crate) fn prepare_heads(x: &[f32], heads: usize, head_dim: usize, prep: HeadPrep<'_>, out: &mut [f32]) {
    let row = heads * head_dim;
    for_row_chunks(out, row, |chunk, first_token| {
        let input = &x[first_token * row..first_token * row + chunk.len()];
        for (t, (token_out, token_in)) in chunk.chunks_exact_mut(row).zip(input.chunks_exact(row)).enumerate() {
            for (u, y) in token_in.chunks_exact(head_dim).zip(token_out.chunks_exact_mut(head_dim)) {
                prepare_row(u, y, first_token + t, prep);
            }
        }
    });
}

fn prepare_row(u: &[f32], y: &mut [f32], token: usize, prep: HeadPrep<'_>) {
    rms_norm_row(u, prep.weight, prep.eps, y);
    let Some(rope) = prep.rope else { return };
    let c = rope.channels;
    let half = c / 2;
    let table_row = ((token / rope.len) % rope.batch * rope.len + token % rope.len) * c;
    for (part, (cos, sin)) in y.chunks_exact_mut(c).zip(&rope.parts) {
        let (cos, sin) = (&cos[table_row..table_row + c], &sin[table_row..table_row + c]);
        for i in 0..half {
            let (a, b) = (part[i], part[i + half]);
            part[i] = a * cos[i] + -b * sin[i];
            part[i + half] = b * cos[i + half] + a * sin[i + half];
        }
    }
}

//! Pillow's per-axis bicubic weights (`precompute_coeffs` + `normalize_coeffs_8bpc` of
//! `src/libImaging/Resample.c`), ported operation for operation.

use crate::{Error, Result};

/// Fixed-point precision of the 8-bit path: `PRECISION_BITS = 32 - 8 - 2`.
pub const PRECISION_BITS: u32 = 22;

/// The rounding term every accumulator starts from: `1 << (PRECISION_BITS - 1)`.
pub const HALF: i32 = 1 << (PRECISION_BITS - 1);

/// Bicubic support (`BICUBIC = {bicubic_filter, 2.0}`).
const SUPPORT: f64 = 2.0;

/// The weights of one axis: output index `i` reads `len[i]` consecutive inputs from
/// `start[i]`, weighted by `weights[i * ksize .. i * ksize + len[i]]`.
#[derive(Debug, Clone)]
pub struct Coefficients {
    /// Stride of `weights` between outputs (`ceil(support) * 2 + 1`).
    pub ksize: usize,
    /// First input index of each output.
    pub start: Vec<usize>,
    /// Number of inputs of each output.
    pub len: Vec<usize>,
    /// Fixed-point weights, `(int)(w * 2^22 ± 0.5)` of the normalised double weights.
    pub weights: Vec<i32>,
}

impl Coefficients {
    /// Weights for resampling `in_size` samples to `out_size` over the whole axis (Pillow's box
    /// `(0, in_size)`, which Python passes as C floats). An `out_size` past
    /// [`Limits::PILLOW_BOMB_PIXELS`](crate::Limits::PILLOW_BOMB_PIXELS) (no image of that side
    /// is accepted) is refused before the tables are allocated.
    pub fn bicubic(in_size: u32, out_size: u32) -> Result<Self> {
        if in_size == 0 || out_size == 0 || u64::from(out_size) > crate::Limits::PILLOW_BOMB_PIXELS {
            return Err(Error::invalid("resize", format!("cannot resample {in_size} samples to {out_size}")));
        }
        // `filterscale = scale = (double)(in1 - in0) / outSize` with float in0 = 0, in1 = in_size.
        let scale = f64::from(in_size as f32 - 0.0f32) / f64::from(out_size);
        let filterscale = if scale < 1.0 { 1.0 } else { scale };
        let support = SUPPORT * filterscale;
        let ksize = support.ceil() as usize * 2 + 1;
        let out = out_size as usize;
        let mut start = Vec::with_capacity(out);
        let mut len = Vec::with_capacity(out);
        let mut weights = vec![0i32; out * ksize];
        let mut k = vec![0f64; ksize];
        let inv_filterscale = 1.0 / filterscale;
        for xx in 0..out {
            let center = 0.0 + (xx as f64 + 0.5) * scale;
            let mut ww = 0.0;
            // C's `(int)` truncates toward zero.
            let xmin = ((center - support + 0.5) as i64).max(0);
            let xmax = ((center + support + 0.5) as i64).min(i64::from(in_size)) - xmin;
            let count = xmax.max(0) as usize;
            for (x, kx) in k.iter_mut().enumerate().take(count) {
                let w = bicubic_filter((((x as i64 + xmin) as f64) - center + 0.5) * inv_filterscale);
                *kx = w;
                ww += w;
            }
            if ww != 0.0 {
                for kx in k.iter_mut().take(count) {
                    *kx /= ww;
                }
            }
            for (dst, &kx) in weights[xx * ksize..].iter_mut().zip(&k[..count]) {
                *dst = to_fixed_point(kx);
            }
            start.push(xmin as usize);
            len.push(count);
        }
        Ok(Coefficients { ksize, start, len, weights })
    }

    /// The weights of output `i`.
    pub fn of(&self, i: usize) -> &[i32] {
        &self.weights[i * self.ksize..i * self.ksize + self.len[i]]
    }

    /// First input index any output reads, and one past the last.
    pub fn input_span(&self) -> (usize, usize) {
        let last = self.start.len().saturating_sub(1);
        (self.start.first().copied().unwrap_or(0), self.start.get(last).copied().unwrap_or(0) + self.len[last])
    }
}

/// `bicubic_filter` with `a = -0.5`, in Pillow's evaluation order.
fn bicubic_filter(x: f64) -> f64 {
    const A: f64 = -0.5;
    let x = if x < 0.0 { -x } else { x };
    if x < 1.0 {
        return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    }
    if x < 2.0 {
        return (((x - 5.0) * x + 8.0) * x - 4.0) * A;
    }
    0.0
}

/// `normalize_coeffs_8bpc`: `(int)(±0.5 + w * (1 << PRECISION_BITS))`, truncating toward zero.
fn to_fixed_point(w: f64) -> i32 {
    let scaled = w * f64::from(1u32 << PRECISION_BITS);
    if w < 0.0 { (-0.5 + scaled) as i32 } else { (0.5 + scaled) as i32 }
}

/// Pillow's `clip8`: `clip8_lookups[acc >> PRECISION_BITS]`, i.e. the arithmetic shift clamped
/// to `0..=255`.
#[inline(always)]
pub fn clip8(acc: i32) -> u8 {
    (acc >> PRECISION_BITS).clamp(0, 255) as u8
}

//! Rescale and normalise: the reference's per-element float32 arithmetic, tabulated.

use crate::ProcessorConfig;

/// The float32 value of every (byte, channel) pair after the processor's rescale and
/// normalise steps, computed with the reference's ops in its order:
/// `v = f32(byte)`; if `do_rescale`: `v = v * f32(rescale_factor)` (NumPy casts the Python
/// float to float32 first); if `do_normalize`: `v = (v - f32(mean[c])) / f32(std[c])`.
/// Each output depends only on its byte and channel, so a 256x3 table is exact.
#[derive(Debug, Clone)]
pub struct RescaleTable {
    values: [[f32; 3]; 256],
    /// The same arithmetic, for [`fill`](Self::fill).
    ops: Ops,
}

/// The ops of [`RescaleTable`], with the per-channel constants repeated over [`PERIOD`] lanes.
#[derive(Debug, Clone)]
struct Ops {
    factor: Option<f32>,
    normalize: Option<([f32; PERIOD], [f32; PERIOD])>,
}

/// Values per step of [`RescaleTable::fill`]: a multiple of 3 channels and of 8 vector lanes.
const PERIOD: usize = 24;

impl RescaleTable {
    /// The table for `config`.
    pub fn new(config: &ProcessorConfig) -> Self {
        let factor = config.do_rescale.then_some(config.rescale_factor as f32);
        let (mean, std) = config.mean_std_f32();
        let normalize =
            config.do_normalize.then(|| (std::array::from_fn(|i| mean[i % 3]), std::array::from_fn(|i| std[i % 3])));
        let ops = Ops { factor, normalize };
        let mut values = [[0f32; 3]; 256];
        for (byte, row) in values.iter_mut().enumerate() {
            for (c, v) in row.iter_mut().enumerate() {
                *v = ops.apply(byte as u8, c);
            }
        }
        RescaleTable { values, ops }
    }

    /// The value of `byte` in channel `channel` (0 = R, 1 = G, 2 = B).
    #[inline(always)]
    pub fn get(&self, byte: u8, channel: usize) -> f32 {
        self.values[usize::from(byte)][channel]
    }

    /// `out[i] = self.get(pixels[i], i % 3)` for interleaved RGB `pixels` (starting at a red
    /// byte; `out` as long as `pixels`), computed with the table's ops on whole vectors (the same
    /// IEEE operations, hence the same values).
    pub fn fill(&self, pixels: &[u8], out: &mut [f32]) {
        // The same loops compiled for AVX2 when the CPU has it (8 lanes instead of 4).
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = pulp::x86::V3::try_new() {
            return simd.vectorize(Fill { table: self, pixels, out });
        }
        self.fill_lanes(pixels, out)
    }

    /// Appends the values of `pixels` (interleaved RGB, starting at a red byte) to `out`: the
    /// values [`fill`](Self::fill) writes, each written once (no zeroing first).
    pub fn extend(&self, pixels: &[u8], out: &mut Vec<f32>) {
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = pulp::x86::V3::try_new() {
            return simd.vectorize(Extend { table: self, pixels, out });
        }
        self.extend_lanes(pixels, out)
    }

    #[inline(always)]
    fn extend_lanes(&self, pixels: &[u8], out: &mut Vec<f32>) {
        if self.ops.normalize.is_some() {
            let at = out.len();
            out.resize(at + pixels.len(), 0.0);
            return self.fill_lanes(pixels, &mut out[at..]);
        }
        let factor = self.ops.factor.unwrap_or(1.0);
        let rescale = self.ops.factor.is_some();
        out.reserve(pixels.len());
        // Fixed-size blocks: whole vectors, no scalar tail per call.
        let (blocks, rest) = pixels.as_chunks::<PERIOD>();
        for block in blocks {
            let mut values = [0f32; PERIOD];
            for (v, &b) in values.iter_mut().zip(block) {
                *v = if rescale { f32::from(b) * factor } else { f32::from(b) };
            }
            out.extend_from_slice(&values);
        }
        out.extend(rest.iter().map(|&b| if rescale { f32::from(b) * factor } else { f32::from(b) }));
    }

    #[inline(always)]
    fn fill_lanes(&self, pixels: &[u8], out: &mut [f32]) {
        let ops = &self.ops;
        let len = out.len().min(pixels.len());
        let (out, pixels) = (&mut out[..len], &pixels[..len]);
        // Plain loops over slices and fixed-size arrays, which the compiler vectorizes.
        match (ops.factor, &ops.normalize) {
            (Some(factor), None) => {
                for (o, &b) in out.iter_mut().zip(pixels) {
                    *o = f32::from(b) * factor;
                }
            }
            (None, None) => {
                for (o, &b) in out.iter_mut().zip(pixels) {
                    *o = f32::from(b);
                }
            }
            (factor, Some((mean, std))) => {
                let (values, _) = out.as_chunks_mut::<PERIOD>();
                let (bytes, _) = pixels.as_chunks::<PERIOD>();
                for (o, b) in values.iter_mut().zip(bytes) {
                    for i in 0..PERIOD {
                        let x = match factor {
                            Some(factor) => f32::from(b[i]) * factor,
                            None => f32::from(b[i]),
                        };
                        o[i] = (x - mean[i]) / std[i];
                    }
                }
                let done = len / PERIOD * PERIOD;
                for (i, (o, &b)) in out[done..].iter_mut().zip(&pixels[done..]).enumerate() {
                    *o = self.get(b, i % 3);
                }
            }
        }
    }
}

impl Ops {
    /// The reference's ops on one value of channel `c`.
    fn apply(&self, byte: u8, c: usize) -> f32 {
        let mut x = f32::from(byte);
        if let Some(factor) = self.factor {
            x *= factor;
        }
        if let Some((mean, std)) = &self.normalize {
            x = (x - mean[c]) / std[c];
        }
        x
    }
}

/// [`RescaleTable::fill_lanes`] as a value for `V3::vectorize`, whose `#[inline(always)]` `call`
/// is inlined into its AVX2 function (a closure might not be).
#[cfg(target_arch = "x86_64")]
struct Fill<'a> {
    table: &'a RescaleTable,
    pixels: &'a [u8],
    out: &'a mut [f32],
}

#[cfg(target_arch = "x86_64")]
impl pulp::NullaryFnOnce for Fill<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        self.table.fill_lanes(self.pixels, self.out)
    }
}

/// [`RescaleTable::extend_lanes`] as a value for `V3::vectorize` (see [`Fill`]).
#[cfg(target_arch = "x86_64")]
struct Extend<'a> {
    table: &'a RescaleTable,
    pixels: &'a [u8],
    out: &'a mut Vec<f32>,
}

#[cfg(target_arch = "x86_64")]
impl pulp::NullaryFnOnce for Extend<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        self.table.extend_lanes(self.pixels, self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs() -> Vec<ProcessorConfig> {
        let base = ProcessorConfig::default();
        let normalized = ProcessorConfig {
            do_normalize: true,
            image_mean: Some(vec![0.485, 0.456, 0.406]),
            image_std: Some(vec![0.229, 0.224, 0.225]),
            ..base.clone()
        };
        let raw = ProcessorConfig { do_rescale: false, ..normalized.clone() };
        let plain = ProcessorConfig { do_rescale: false, ..base.clone() };
        vec![base, normalized, raw, plain]
    }

    #[test]
    fn fill_and_extend_equal_the_table_for_every_byte_and_channel() {
        for config in configs() {
            let table = RescaleTable::new(&config);
            // Every byte in every channel, with a length that leaves a remainder.
            let pixels: Vec<u8> = (0..256 * 3 + 7).map(|i| (i * 7 % 256) as u8).chain(0..=255).collect();
            let pixels = &pixels[..pixels.len() / 3 * 3];
            let mut out = vec![0f32; pixels.len()];
            table.fill(pixels, &mut out);
            let mut extended = vec![1.5f32];
            table.extend(pixels, &mut extended);
            assert_eq!(extended.len(), pixels.len() + 1);
            for (i, ((&o, &e), &b)) in out.iter().zip(&extended[1..]).zip(pixels).enumerate() {
                assert_eq!(o.to_bits(), table.get(b, i % 3).to_bits(), "{config:?}: byte {b} channel {}", i % 3);
                assert_eq!(e.to_bits(), o.to_bits(), "{config:?}: extend, byte {b} channel {}", i % 3);
            }
        }
    }
}

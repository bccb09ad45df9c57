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
}

impl RescaleTable {
    /// The table for `config`.
    pub fn new(config: &ProcessorConfig) -> Self {
        let factor = config.rescale_factor as f32;
        let (mean, std) = config.mean_std_f32();
        let mut values = [[0f32; 3]; 256];
        for (byte, row) in values.iter_mut().enumerate() {
            for (c, v) in row.iter_mut().enumerate() {
                let mut x = byte as f32;
                if config.do_rescale {
                    x *= factor;
                }
                if config.do_normalize {
                    x = (x - mean[c]) / std[c];
                }
                *v = x;
            }
        }
        RescaleTable { values }
    }

    /// The value of `byte` in channel `channel` (0 = R, 1 = G, 2 = B).
    #[inline(always)]
    pub fn get(&self, byte: u8, channel: usize) -> f32 {
        self.values[usize::from(byte)][channel]
    }
}

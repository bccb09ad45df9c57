//! [`VisionBlockConfig`]: the dimensions of a gemma4 vision transformer block.

use crate::{Error, Result, RopeTables};
use tensor::{Array, Dtype};

/// The dimensions and constants of a gemma4 vision transformer block (E2B/E4B: hidden 768,
/// intermediate 3072, 12 heads of 64, rms eps 1e-6, rope theta 100). A plain struct: the
/// vision crate fills it from a model config.
#[derive(Debug, Clone, PartialEq)]
pub struct VisionBlockConfig {
    /// Width of the residual stream (`hidden_size`).
    pub hidden_size: i32,
    /// Width of the MLP (`intermediate_size`).
    pub intermediate_size: i32,
    /// Query heads (`num_attention_heads`).
    pub num_heads: i32,
    /// Key/value heads (`num_key_value_heads`); divides `num_heads`.
    pub num_kv_heads: i32,
    /// Channels per head (`head_dim`); a multiple of 4 for 2-D RoPE.
    pub head_dim: i32,
    /// Epsilon of the block's four fused RMS norms (`rms_norm_eps`). The q/k/v norms always use
    /// 1e-6, as the reference does.
    pub rms_norm_eps: f64,
    /// RoPE base frequency (`rope_parameters.rope_theta`).
    pub rope_theta: f64,
    /// Whether every projection clamps its input and output (`use_clipped_linears`).
    pub clipped_linears: bool,
}

impl VisionBlockConfig {
    /// Checks what the reference's arithmetic needs: positive dimensions, `num_kv_heads`
    /// dividing `num_heads`.
    pub fn validate(&self) -> Result<()> {
        let dims = [
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_heads", self.num_heads),
            ("num_kv_heads", self.num_kv_heads),
            ("head_dim", self.head_dim),
        ];
        if let Some((name, value)) = dims.iter().find(|(_, v)| *v <= 0) {
            return Err(Error::Config { block: "vision block", what: format!("{name} is {value}, must be positive") });
        }
        if self.num_heads % self.num_kv_heads != 0 {
            return Err(Error::Config {
                block: "vision block",
                what: format!("num_kv_heads {} does not divide num_heads {}", self.num_kv_heads, self.num_heads),
            });
        }
        Ok(())
    }

    /// The RoPE tables for `positions` (`[B, L, 2]` patch (x, y) ids, or `[B, L]`), cast to `dtype`.
    pub fn rope_tables(&self, positions: &Array, dtype: Dtype) -> Result<RopeTables> {
        RopeTables::new(positions, self.head_dim, self.rope_theta, dtype)
    }
}

//! [`gelu_approx`]: `mlx.nn.gelu_approx`, the tanh approximation of GELU.

use crate::Result;
use tensor::Array;

/// The tanh GELU, as `mlx.nn.gelu_approx` computes it:
///
/// ```text
/// (0.5 * x) * (1 + tanh(sqrt(2/π) * (x + 0.044715 * power(x, 3))))
/// ```
///
/// evaluated in exactly that order, every constant a weak scalar in `x`'s dtype (in bf16:
/// 0.5, 0.796875, 0.044677734375, 1, and the exponent 3). The reference wraps this in
/// `mx.compile`; on the CPU the compiled and the eager graphs give identical bits (the op
/// parity suite compares this function with the compiled one).
pub fn gelu_approx(x: &Array) -> Result<Array> {
    let sqrt_2_over_pi = (2.0 / std::f64::consts::PI).sqrt();
    let cubic = x.power(3)?.mul(0.044715)?;
    let inner = x.add(&cubic)?.mul(sqrt_2_over_pi)?;
    let gate = inner.tanh()?.add(1)?;
    Ok(x.mul(0.5)?.mul(&gate)?)
}

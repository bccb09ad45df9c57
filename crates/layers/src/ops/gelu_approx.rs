//! [`gelu_approx`]: `mlx.nn.gelu_approx`, the tanh approximation of GELU, compiled as the
//! reference compiles it.

use crate::Result;
use std::sync::OnceLock;
use tensor::{Array, Compiled};

/// The tanh GELU, as `mlx.nn.gelu_approx` computes it:
///
/// ```text
/// (0.5 * x) * (1 + tanh(sqrt(2/π) * (x + 0.044715 * power(x, 3))))
/// ```
///
/// every constant a weak scalar in `x`'s dtype (in bf16: 0.5, 0.796875, 0.044677734375, 1,
/// and the exponent 3), each binary op with the array first, as MLX's Python operators build
/// the graph. Like the reference (`@partial(mx.compile, shapeless=True)`), the graph goes
/// through MLX's compile ([`Compiled`]), so it is computed as the reference's is: one fused
/// kernel where MLX's CPU JIT is on (a `g++` on `PATH`; on aarch64 Linux that kernel's float32
/// cubic term is one fused multiply-add, [`gelu_cubic_term`](crate::gelu_cubic_term)), the ops
/// one by one where it is off.
pub fn gelu_approx(x: &Array) -> Result<Array> {
    static COMPILED: OnceLock<&'static Compiled> = OnceLock::new();
    let compiled = match COMPILED.get() {
        Some(compiled) => compiled,
        None => {
            let compiled = Compiled::new("gelu_approx", gelu_approx_graph, true)?;
            COMPILED.get_or_init(|| compiled)
        }
    };
    let mut outputs = compiled.apply(&[x])?.into_iter();
    match (outputs.next(), outputs.next()) {
        (Some(y), None) => Ok(y),
        _ => Err(tensor::Error::Shape {
            op: "gelu_approx",
            detail: "the compiled function gave no single output".into(),
        }
        .into()),
    }
}

/// The graph [`gelu_approx`] compiles, in the reference's op order.
fn gelu_approx_graph(inputs: &[Array]) -> tensor::Result<Vec<Array>> {
    let [x] = inputs else {
        return Err(tensor::Error::Shape { op: "gelu_approx", detail: format!("{} inputs, expected 1", inputs.len()) });
    };
    let sqrt_2_over_pi = (2.0 / std::f64::consts::PI).sqrt();
    let half = x.mul(0.5)?;
    let cubic = x.power(3)?.mul(0.044715)?;
    let inner = x.add(&cubic)?.mul(sqrt_2_over_pi)?;
    let gate = inner.tanh()?.add(1)?;
    Ok(vec![half.mul(&gate)?])
}

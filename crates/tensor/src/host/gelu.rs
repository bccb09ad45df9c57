//! The gated tanh-GELU of gemma4's MLP, fused with its gate product.

use super::exp::exp_in_place;
use super::parallel::for_row_chunks;

/// `out[i] = gelu_tanh(gate[i]) · up[i]` with
/// `gelu_tanh(x) = 0.5·x·(1 + tanh(u))`, `u = √(2/π)·(x + 0.044715·x³)`, evaluated as the
/// equal `x / (1 + e^{−2u})` through the vectorised exponential (no cancellation for large
/// negative `x`). The output has the length of the shortest slice. Work is spread over the
/// cores.
pub fn gelu_tanh_mul(gate: &[f32], up: &[f32], out: &mut [f32]) {
    let n = gate.len().min(up.len()).min(out.len());
    for_row_chunks(&mut out[..n], 1, |chunk, start| {
        let end = start + chunk.len();
        gelu_tanh_mul_serial(&gate[start..end], &up[start..end], chunk);
    });
}

fn gelu_tanh_mul_serial(gate: &[f32], up: &[f32], out: &mut [f32]) {
    const C1: f32 = 0.797_884_6; // √(2/π)
    const C2: f32 = 0.044_715;
    let n = gate.len().min(up.len()).min(out.len());
    const BLOCK: usize = 1024;
    let mut e2u = [0f32; BLOCK]; // e^{-2u} per block
    for start in (0..n).step_by(BLOCK) {
        let end = (start + BLOCK).min(n);
        let block = &mut e2u[..end - start];
        for (e, &x) in block.iter_mut().zip(&gate[start..end]) {
            *e = -2.0 * C1 * (x + C2 * x * x * x);
        }
        exp_in_place(block);
        for ((o, &e), (&x, &u)) in
            out[start..end].iter_mut().zip(block.iter()).zip(gate[start..end].iter().zip(&up[start..end]))
        {
            *o = x / (1.0 + e) * u;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_formula_in_double_precision() {
        let gate: Vec<f32> = (-3000..3000).map(|i| i as f32 * 0.005).collect();
        let up: Vec<f32> = gate.iter().map(|x| 1.0 - x * 0.1).collect();
        let mut out = vec![0f32; gate.len()];
        gelu_tanh_mul(&gate, &up, &mut out);
        for ((&x, &up), &o) in gate.iter().zip(&up).zip(&out) {
            let x64 = x as f64;
            let arg = (2.0 / std::f64::consts::PI).sqrt() * (x64 + 0.044715 * x64.powi(3));
            // 0.5·x·(1 + tanh arg) in a form that keeps its precision for large negative x.
            let g = x64 / (1.0 + (-2.0 * arg).exp());
            assert!((g - 0.5 * x64 * (1.0 + arg.tanh())).abs() < 1e-12);
            let expected = g * up as f64;
            // float32 rounding of the exponent's argument scales the relative error by |2u|.
            let tolerance = 4e-7 * (1.0 + 2.0 * arg.abs()) * expected.abs() + 1e-37;
            assert!((o as f64 - expected).abs() <= tolerance, "x = {x}: {o} vs {expected}");
        }
    }
}

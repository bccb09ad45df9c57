//! `cargo xtask doctor`: what this build computes on. The MLX library (its version and the
//! libmlx file opened) and its backend, the
//! BLAS libmlx resolved, how the host kernels run here (AVX-512F, AVX2+FMA, NEON or the portable loops,
//! how many threads), and one square matmul per dtype timed both ways: MLX's own op and the host kernel,
//! with a check that the two give the same bits.

extern crate gemma_vision_layers as layers;

use layers::Execution;
use layers::ops::matmul;
use std::time::Instant;
use tensor::{Array, Device, Dtype};

const SIDE: i32 = 1024;

fn main() -> layers::Result<()> {
    let version = tensor::info::mlx_version()?;
    let device = Device::default_device()?;
    let blas = tensor::info::blas_provider();
    let library = tensor::info::mlx_library()?;
    println!("MLX            {version}: {} (mlx-c built for {})", library.display(), tensor::info::mlx_build_version());
    println!("device         {device:?} (GPU available: {})", Device::Gpu.is_available());
    println!("BLAS           {}", blas.map_or("none found".to_owned(), |p| p.display().to_string()));
    println!("host kernels   {}, {} threads", kernels::cpu::isa(), kernels::parallel::threads());
    println!("host parity    {}", layers::HostParity::here());
    for dtype in [Dtype::F32, Dtype::Bf16] {
        let (mlx, mlx_gflops) = timed(dtype, Execution::Mlx)?;
        let (host, host_gflops) = timed(dtype, Execution::Host)?;
        let same = bits_equal(&mlx, &host)?;
        println!(
            "matmul {SIDE}³ {dtype:<8} MLX {mlx_gflops:7.1} GFLOP/s, host kernel {host_gflops:7.1} GFLOP/s, same bits: {}",
            if same { "yes" } else { "NO" }
        );
    }
    Ok(())
}

/// The product of a fixed `SIDE × SIDE` matrix with its transpose, and its GFLOP/s (the best of
/// a few runs after a warm-up).
fn timed(dtype: Dtype, execution: Execution) -> layers::Result<(Array, f64)> {
    let values: Vec<f32> = (0..SIDE * SIDE).map(|i| ((i % 97) as f32 - 48.0) / 97.0).collect();
    let a = Array::from_slice(&values, &[SIDE, SIDE])?.astype(dtype)?;
    let b = a.t()?;
    let runs = if execution == Execution::Mlx && dtype == Dtype::Bf16 { 1 } else { 3 };
    let mut out = matmul(execution, &a, &b)?;
    out.eval()?;
    let mut best = f64::INFINITY;
    for _ in 0..runs {
        let start = Instant::now();
        out = matmul(execution, &a, &b)?;
        out.eval()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok((out, 2.0 * f64::from(SIDE).powi(3) / best / 1e9))
}

/// Whether two float32 or bf16 arrays hold the same bits (bf16 widens to float32 exactly).
fn bits_equal(a: &Array, b: &Array) -> layers::Result<bool> {
    let (a, b) = (a.astype(Dtype::F32)?, b.astype(Dtype::F32)?);
    let (a, b) = (a.to_vec::<f32>()?, b.to_vec::<f32>()?);
    Ok(a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()))
}

//! `cargo xtask doctor`: the MLX this build runs on, its backend, the BLAS serving its float32
//! matmuls, MLX's measured matmul throughput and that of the host kernels.

use std::time::Instant;
use tensor::{Array, Device, Dtype};

fn main() -> tensor::Result<()> {
    let version = tensor::info::mlx_version()?;
    let device = Device::default_device()?;
    let blas = tensor::info::blas_provider();
    println!("MLX          {version} ({})", mlx_ffi::MLX_LIB_DIR);
    println!("device       {device:?} (GPU available: {})", Device::Gpu.is_available());
    println!("BLAS         {}", blas.map_or("none found".to_owned(), |p| p.display().to_string()));
    for dtype in [Dtype::F32, Dtype::Bf16] {
        let gflops = matmul_gflops(1024, dtype)?;
        println!("matmul 1024³ {dtype}: {gflops:.1} GFLOP/s");
    }
    Ok(())
}

fn matmul_gflops(n: i32, dtype: Dtype) -> tensor::Result<f64> {
    let values: Vec<f32> = (0..n * n).map(|i| ((i % 97) as f32 - 48.0) / 97.0).collect();
    let a = Array::from_slice(&values, &[n, n])?.astype(dtype)?;
    let b = a.t()?;
    a.matmul(&b)?.eval()?;
    let runs = if dtype == Dtype::F32 { 10 } else { 2 };
    let start = Instant::now();
    for _ in 0..runs {
        a.matmul(&b)?.eval()?;
    }
    let seconds = start.elapsed().as_secs_f64() / f64::from(runs);
    Ok(2.0 * f64::from(n).powi(3) / seconds / 1e9)
}

//! `kernels::quantized::quantized_matmul` at the models' shapes, in GFLOP/s (criterion's
//! "elem/s" counts `2·M·N·K` flops per product), beside `kernels::gemm` on the same shapes
//! with dense weights: x `[M, K]` times `Wᵀ`, `W` `[N, K]`, as `nn.QuantizedLinear` and
//! `nn.Linear` run.
//!
//! - `unified/patch_dense`: 280 × 6912 → 3840, affine 4 bits, groups of 64, float32 `x` (bf16
//!   scales: the product is float32).
//! - `unified/projector`: 280 × 3840 → 3840, mxfp4, float32 `x`.
//! - `e2b/projector`: 266 × 768 → 1536, bf16 `x`: affine 4 bits / 64 (bf16 scales) and mxfp4.
//! - `e2b/tower`: 2394 × 768 → 3072, bf16 `x`, affine 4 bits / 64.
//!
//! Ids `quantized/<model>/<module>/<dtype> <product>/MxKxN`, the dtype that of `x` and the
//! product (`bf16`, `f32`, or `f32+bf16w`: float32 `x` by bf16 weights), the product
//! `affine4g64` or `mxfp4` (`quantized_matmul`) or `dense` (`gemm` with the dense weights: bf16
//! for a bf16 `x`; bf16 or float32 for a float32 one). `GEMM_KERNEL=portable` benches the
//! portable micro-kernel instead of the detected one, `GEMM_KERNEL=avx2` the AVX2 one,
//! `GEMM_KERNEL=neon` the NEON one (aarch64); `RAYON_NUM_THREADS` sets the threads.

extern crate gemma_vision_kernels as kernels;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use half::bf16;
use kernels::Float;
use kernels::gemm::{Blocking, GemmOptions, MatRef, MicroKernel, gemm_with};
use kernels::quantized::{Quantization, QuantizedMatrix, Scales, quantized_matmul_with};
use kernels::testing::lcg_values;
use std::time::Duration;

/// Which product runs at a shape.
#[derive(Clone, Copy)]
enum Product {
    /// Affine 4 bits, groups of 64, `x` in the product's dtype (`true`: bf16, else float32).
    Affine(bool),
    /// mxfp4, `x` as for `Affine`.
    Mxfp4(bool),
    GemmBf16,
    GemmF32Bf16w,
    GemmF32,
}

struct Shape {
    group: &'static str,
    name: &'static str,
    m: usize,
    k: usize,
    n: usize,
    products: &'static [Product],
}

const SHAPES: [Shape; 4] = [
    Shape {
        group: "unified",
        name: "patch_dense",
        m: 280,
        k: 6912,
        n: 3840,
        products: &[Product::Affine(false), Product::GemmF32Bf16w, Product::GemmF32],
    },
    Shape {
        group: "unified",
        name: "projector",
        m: 280,
        k: 3840,
        n: 3840,
        products: &[Product::Mxfp4(false), Product::GemmF32Bf16w, Product::GemmF32],
    },
    Shape {
        group: "e2b",
        name: "projector",
        m: 266,
        k: 768,
        n: 1536,
        products: &[Product::Affine(true), Product::Mxfp4(true), Product::GemmBf16],
    },
    Shape {
        group: "e2b",
        name: "tower",
        m: 2394,
        k: 768,
        n: 3072,
        products: &[Product::Affine(true), Product::GemmBf16],
    },
];

fn kernel() -> MicroKernel {
    match std::env::var("GEMM_KERNEL").as_deref() {
        Ok("portable") => MicroKernel::Portable,
        Ok("avx2") => MicroKernel::Avx2,
        Ok("neon") => MicroKernel::Neon,
        _ => MicroKernel::detect(),
    }
}

fn bench_quantized<X: Float>(c: &mut Criterion, shape: &Shape, quantization: Quantization) {
    let Shape { group, name, m, k, n, .. } = *shape;
    let x = lcg_values::<X>(m * k, 1, 1.0);
    let packed: Vec<u32> = lcg_values::<f32>(n * k * quantization.bits() / 32, 2, 1.0)
        .iter()
        .map(|v| v.to_bits().wrapping_mul(2_654_435_761))
        .collect();
    let groups = n * k / quantization.group_size();
    // Affine: bf16 scales and biases of a 4-bit quantization of values in [-0.1, 0.1); fp: E8M0
    // exponents near 2^-8.
    let scales: Vec<bf16> =
        lcg_values::<bf16>(groups, 3, 0.002).iter().map(|s| bf16::from_f32(s.to_f32() + 0.012)).collect();
    let biases: Vec<bf16> = lcg_values::<bf16>(groups, 4, 0.1);
    let fp_scales: Vec<u8> = (0..groups).map(|g| 117 + (g % 5) as u8).collect();
    let scales = match quantization.mode() {
        kernels::quantized::QuantizationMode::Affine => {
            Scales::Affine { scales: scales[..].into(), biases: biases[..].into() }
        }
        _ => Scales::Fp(&fp_scales),
    };
    let w = QuantizedMatrix::new(&packed, scales, quantization, n, k).unwrap();
    let a = MatRef::row_major(&x, m, k).unwrap();
    let mut out = vec![X::default(); m * n];
    let (kernel, blocking) = (kernel(), Blocking::for_shape(m, k, n));
    let label = match quantization.mode() {
        kernels::quantized::QuantizationMode::Affine => "affine4g64",
        _ => "mxfp4",
    };
    let dtype = if X::DTYPE == kernels::ElementType::Bf16 { "bf16" } else { "f32" };
    let mut bench_group = c.benchmark_group(format!("quantized/{group}/{name}"));
    bench_group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    bench_group.throughput(Throughput::Elements((2 * m * n * k) as u64));
    bench_group.bench_function(BenchmarkId::new(format!("{dtype} {label}"), format!("{m}x{k}x{n}")), |bencher| {
        bencher.iter(|| quantized_matmul_with(kernel, blocking, a, &w, &mut out, &GemmOptions::default()).unwrap())
    });
    bench_group.finish();
}

fn bench_gemm<X: Float, W: Float, O: Float>(c: &mut Criterion, shape: &Shape, label: &str) {
    let Shape { group, name, m, k, n, .. } = *shape;
    let x = lcg_values::<X>(m * k, 1, 1.0);
    let w = lcg_values::<W>(n * k, 2, 0.1);
    let a = MatRef::row_major(&x, m, k).unwrap();
    let b = MatRef::row_major(&w, n, k).unwrap().t();
    let mut out = vec![O::default(); m * n];
    let (kernel, blocking) = (kernel(), Blocking::for_shape(m, k, n));
    let mut bench_group = c.benchmark_group(format!("quantized/{group}/{name}"));
    bench_group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    bench_group.throughput(Throughput::Elements((2 * m * n * k) as u64));
    bench_group.bench_function(BenchmarkId::new(label, format!("{m}x{k}x{n}")), |bencher| {
        bencher.iter(|| gemm_with(kernel, blocking, a, b, &mut out, &GemmOptions::default()).unwrap())
    });
    bench_group.finish();
}

fn bench(c: &mut Criterion) {
    for shape in &SHAPES {
        for &product in shape.products {
            match product {
                Product::Affine(bf16_x) | Product::Mxfp4(bf16_x) => {
                    let q = match product {
                        Product::Affine(_) => Quantization::affine(4, 64).unwrap(),
                        _ => Quantization::MXFP4,
                    };
                    if bf16_x { bench_quantized::<bf16>(c, shape, q) } else { bench_quantized::<f32>(c, shape, q) }
                }
                Product::GemmBf16 => bench_gemm::<bf16, bf16, bf16>(c, shape, "bf16 dense"),
                Product::GemmF32Bf16w => bench_gemm::<f32, bf16, f32>(c, shape, "f32+bf16w dense"),
                Product::GemmF32 => bench_gemm::<f32, f32, f32>(c, shape, "f32 dense"),
            }
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

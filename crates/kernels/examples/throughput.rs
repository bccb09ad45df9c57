//! GFLOP per CPU-second and per wall-second of `kernels::gemm` and `kernels::attention` at the
//! gemma4 towers' shapes: a measurement that survives a shared machine (CPU time counts only
//! the cycles this process ran). Each case runs `--reps` times after a warm-up; the cases
//! alternate (round-robin) so that load changes hit them alike, and the best and median of
//! each are printed with the load average.
//!
//! ```text
//! cargo run --release -p gemma-vision-kernels --example throughput -- [--reps N] [--filter TEXT] [--images N] [--tokens N]
//!     [--blocking MC,KC,NC]
//! RAYON_NUM_THREADS=1 cargo run --release -p gemma-vision-kernels --example throughput
//! ```
//!
//! Cases: `gemm/e2b/{bf16,f32,f32+bf16w}/MxKxN` (x `[M, K]` times `W.T`, `W` `[N, K]`, as
//! `nn.Linear` runs; `M` is 2394 tokens per image, or `--tokens`, `--images` of them; the
//! attentions' sequence is that many tokens too), the 31b-shaped
//! widths, and `attention/{e2b,31b}/{bf16,f32}` with the tower's `[1, 1, L, L]` mask of one
//! image (zeros) and, `/padded`, of a batch whose last 100 tokens are padding (flops:
//! `4·Hq·L²·D`, the two products); `quantized/{unified,e2b}/…` (`quantized_matmul`, affine 4
//! bits with groups of 64 or mxfp4, at the unified embedder's and e2b's projections and an
//! e2b tower linear) beside `gemm` with dense bf16 weights at the same shapes. `--blocking`
//! runs the `gemm` cases with that cache blocking (`Blocking::new`) instead of the one `gemm`
//! chooses for the shape (the bits are the same).

#![allow(unsafe_code, reason = "clock_gettime, the process CPU clock")]

extern crate gemma_vision_kernels as kernels;

use half::bf16;
use kernels::Float;
use kernels::attention::{AttentionInputs, AttentionShape, MaskRef, attention};
use kernels::gemm::{Blocking, GemmOptions, MatRef, MicroKernel, gemm_with};
use kernels::quantized::{Quantization, QuantizationMode, QuantizedMatrix, Scales, quantized_matmul};
use kernels::testing::{lcg_values, tower_mask};
use std::time::Instant;

/// The tokens of one image at the towers' default budget.
const TOKENS: usize = 2394;

/// This process's CPU time (all threads), in seconds.
fn cpu_seconds() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// One case: its name, its flops, and a closure that runs it once.
struct Case {
    name: String,
    flops: f64,
    run: Box<dyn FnMut()>,
    cpu: Vec<f64>,
    wall: Vec<f64>,
}

/// The blocking of an `m × k` by `k × n` product: `--blocking`'s, else `gemm`'s own.
type BlockingChoice = Option<(usize, usize, usize)>;

fn gemm_case<X: Float, W: Float, O: Float>(
    group: &str,
    label: &str,
    (m, k, n): (usize, usize, usize),
    blocking: BlockingChoice,
) -> Case {
    let x = lcg_values::<X>(m * k, 1, 1.0);
    let w = lcg_values::<W>(n * k, 2, 1.0);
    let mut out = vec![O::default(); m * n];
    Case {
        name: format!("gemm/{group}/{label}/{m}x{k}x{n}"),
        flops: 2.0 * (m * n * k) as f64,
        run: Box::new(move || {
            let a = MatRef::row_major(&x, m, k).unwrap();
            let b = MatRef::row_major(&w, n, k).unwrap().t();
            let blocking = blocking.map_or(Blocking::for_shape(m, k, n), |(mc, kc, nc)| Blocking::new(mc, kc, nc));
            gemm_with(MicroKernel::detect(), blocking, a, b, &mut out, &GemmOptions::default()).unwrap();
        }),
        cpu: Vec::new(),
        wall: Vec::new(),
    }
}

/// `quantized_matmul` of `x` `[m, k]` (in `X`, the product's dtype) by an `[n, k]` matrix of
/// random codes quantized as `q` (affine: bf16 scales and biases; fp: E8M0 scales near 2^-8).
fn quantized_case<X: Float>(group: &str, label: &str, q: Quantization, m: usize, k: usize, n: usize) -> Case {
    let x = lcg_values::<X>(m * k, 1, 1.0);
    let packed: Vec<u32> = (0..n * k * q.bits() / 32).map(|i| (i as u32).wrapping_mul(2_654_435_761)).collect();
    let groups = n * k / q.group_size();
    let scales: Vec<bf16> = lcg_values::<bf16>(groups, 3, 0.01);
    let biases: Vec<bf16> = lcg_values::<bf16>(groups, 4, 0.1);
    let fp_scales: Vec<u8> = (0..groups).map(|g| 117 + (g % 5) as u8).collect();
    let mut out = vec![X::default(); m * n];
    Case {
        name: format!("quantized/{group}/{label}/{m}x{k}x{n}"),
        flops: 2.0 * (m * n * k) as f64,
        run: Box::new(move || {
            let scales = match q.mode() {
                QuantizationMode::Affine => Scales::Affine { scales: scales[..].into(), biases: biases[..].into() },
                _ => Scales::Fp(&fp_scales),
            };
            let w = QuantizedMatrix::new(&packed, scales, q, n, k).unwrap();
            let x = MatRef::row_major(&x, m, k).unwrap();
            quantized_matmul(x, &w, &mut out, &GemmOptions::default()).unwrap();
        }),
        cpu: Vec::new(),
        wall: Vec::new(),
    }
}

fn attention_case<T: Float>(
    group: &str,
    label: &str,
    (tokens, heads, head_dim): (usize, usize, usize),
    padding: usize,
) -> Case {
    let shape =
        AttentionShape { batch: 1, query_heads: heads, kv_heads: heads, queries: tokens, keys: tokens, head_dim };
    let len = tokens * heads * head_dim;
    let (q, k, v) = (lcg_values::<T>(len, 1, 2.0), lcg_values::<T>(len, 2, 2.0), lcg_values::<T>(len, 3, 1.0));
    // The tower's mask: zeros among real patches, -1e4 to and from the padding (the last
    // `padding` tokens; none for a single image).
    let mask: Vec<T> = tower_mask(tokens, tokens - padding);
    let mut out = vec![T::default(); len];
    Case {
        name: format!("attention/{group}/{label}{}", if padding > 0 { "/padded" } else { "" }),
        flops: 4.0 * (heads * tokens * tokens * head_dim) as f64,
        run: Box::new(move || {
            let mask = Some(MaskRef::new(&mask, 1, 1));
            attention(AttentionInputs { shape, q: &q, k: &k, v: &v, scale: 0.125, mask }, &mut out).unwrap();
        }),
        cpu: Vec::new(),
        wall: Vec::new(),
    }
}

fn all_cases(images: usize, tokens: usize, blocking: BlockingChoice) -> Vec<Case> {
    let mut cases = Vec::new();
    for (group, shapes) in
        [("e2b", [(768, 768), (768, 3072), (3072, 768)]), ("31b", [(1152, 1152), (1152, 4304), (4304, 1152)])]
    {
        for (k, n) in shapes {
            let extents = (images * tokens, k, n);
            cases.push(gemm_case::<bf16, bf16, bf16>(group, "bf16", extents, blocking));
            cases.push(gemm_case::<f32, f32, f32>(group, "f32", extents, blocking));
            cases.push(gemm_case::<f32, bf16, f32>(group, "f32+bf16w", extents, blocking));
        }
    }
    let affine = Quantization::affine(4, 64).expect("affine 4 bits, groups of 64");
    cases.push(quantized_case::<f32>("unified", "affine4g64-f32", affine, 280, 6912, 3840));
    cases.push(gemm_case::<f32, bf16, f32>("unified", "f32+bf16w", (280, 6912, 3840), blocking));
    cases.push(quantized_case::<f32>("unified", "mxfp4-f32", Quantization::MXFP4, 280, 3840, 3840));
    cases.push(gemm_case::<f32, bf16, f32>("unified", "f32+bf16w", (280, 3840, 3840), blocking));
    cases.push(quantized_case::<bf16>("e2b", "affine4g64-bf16", affine, 266, 768, 1536));
    cases.push(quantized_case::<bf16>("e2b", "mxfp4-bf16", Quantization::MXFP4, 266, 768, 1536));
    cases.push(gemm_case::<bf16, bf16, bf16>("e2b", "bf16", (266, 768, 1536), blocking));
    cases.push(quantized_case::<bf16>("e2b", "affine4g64-bf16", affine, images * tokens, 768, 3072));
    for (group, heads, head_dim) in [("e2b", 12, 64), ("31b", 16, 72)] {
        let shape = (tokens, heads, head_dim);
        cases.push(attention_case::<bf16>(group, "bf16", shape, 0));
        cases.push(attention_case::<f32>(group, "f32", shape, 0));
        cases.push(attention_case::<bf16>(group, "bf16", shape, 100.min(tokens / 2)));
    }
    cases
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() {
    let mut reps = 5;
    let mut filter = String::new();
    let mut images = 1;
    let mut tokens = TOKENS;
    let mut blocking = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--reps" => reps = args.next().and_then(|s| s.parse().ok()).expect("--reps N"),
            "--filter" => filter = args.next().expect("--filter TEXT"),
            "--images" => images = args.next().and_then(|s| s.parse().ok()).expect("--images N"),
            "--tokens" => tokens = args.next().and_then(|s| s.parse().ok()).expect("--tokens N"),
            "--blocking" => {
                let text = args.next().expect("--blocking MC,KC,NC");
                let n: Vec<usize> = text.split(',').map(|x| x.parse().expect("--blocking MC,KC,NC")).collect();
                let [mc, kc, nc] = n[..] else { panic!("--blocking MC,KC,NC: three numbers") };
                blocking = Some((mc, kc, nc));
            }
            other => panic!("unknown argument {other}"),
        }
    }
    let mut cases: Vec<Case> =
        all_cases(images, tokens, blocking).into_iter().filter(|c| c.name.contains(&filter)).collect();
    println!(
        "{} on {}, threads {}, load average before: {}",
        kernels::cpu::isa(),
        std::env::consts::ARCH,
        kernels::parallel::threads(),
        load_average()
    );
    for case in &mut cases {
        (case.run)();
    }
    for _ in 0..reps {
        for case in &mut cases {
            let (cpu, wall) = (cpu_seconds(), Instant::now());
            (case.run)();
            case.cpu.push(cpu_seconds() - cpu);
            case.wall.push(wall.elapsed().as_secs_f64());
        }
    }
    println!("{:<40} {:>10} {:>10} {:>10} {:>10}", "case", "GF/cpu-s", "(median)", "GF/s wall", "(median)");
    for case in &mut cases {
        let best = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            (case.flops / v[0] / 1e9, case.flops / v[v.len() / 2] / 1e9)
        };
        let (cpu_best, cpu_median) = best(&mut case.cpu);
        let (wall_best, wall_median) = best(&mut case.wall);
        println!("{:<40} {cpu_best:>10.2} {cpu_median:>10.2} {wall_best:>10.2} {wall_median:>10.2}", case.name);
    }
    println!("load average after: {}", load_average());
}

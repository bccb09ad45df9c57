//! Our side of `cargo xtask bench e2e` (and of `gpu-check`'s bench): image bytes → features,
//! timed.
//!
//! ```text
//! cargo run --release -p bench-encode -- --model DIR --image FILE [--image FILE]...
//!     [--budget N] [--dtype native|f32] [--runs N] [--out FILE.safetensors]
//! cargo run --release -p bench-encode -- --gemm
//! cargo run --release -p bench-encode -- --floor
//! ```
//!
//! Loads the model directory once (timed: `load_seconds`), then runs `VisionEncoder::encode_files`
//! (decode + EXIF orientation + preprocess + encoder) and evaluates the features, `--runs` times
//! (timed each: `seconds`), with freed memory retained for reuse as the `gemma-vision` command
//! does (`tensor::memory::retain_freed_host_memory`). Prints one JSON line with the per-run seconds, their median, the soft
//! tokens per image, the features' shape and dtype, the process's peak RSS (VmHWM) and MLX's
//! peak memory (`tensor::memory::peak_memory`). `--out` saves the last run's features
//! (`features`, the encoder's dtype).
//!
//! `--gemm` instead times float32 matmuls through MLX (the mlx-cpu wheel's bundled BLAS) at square and
//! tower-like shapes and prints one JSON line with each shape's best GFLOP/s (2·M·K·N flops per
//! product) and the largest of them (`peak_gflops`).
//!
//! `--floor` instead measures the exactness floor's rates ([`kernels::peak`]) on every core, at
//! each instruction set the kernels can run here, and prints one JSON line: per instruction set
//! the GFLOP/s of the fused multiply-add and of the multiply-then-add (2 flops per
//! multiply-add) and the `exp`s per nanosecond, with the instruction set the kernels run
//! (`kernels`) and the thread count.

use std::path::PathBuf;
use std::time::Instant;
use tensor::{Array, Dtype};
use vision::{ComputeDtype, EncoderOptions, VisionEncoder};

const USAGE: &str = "usage: bench_encode --model DIR --image FILE [--image FILE]... [--budget N] [--dtype native|f32] \
                     [--runs N] [--out FILE.safetensors]\n       bench_encode --gemm\n       bench_encode --floor";

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

#[derive(Debug)]
struct Args {
    model: Option<PathBuf>,
    images: Vec<PathBuf>,
    budget: Option<vision::SoftTokenBudget>,
    dtype: ComputeDtype,
    runs: usize,
    out: Option<PathBuf>,
    gemm: bool,
    floor: bool,
}

fn main() -> Result<()> {
    let args = parse(std::env::args().skip(1).collect())?;
    if args.gemm {
        gemm_peak()
    } else if args.floor {
        floor()
    } else {
        bench(&args)
    }
}

fn parse(argv: Vec<String>) -> Result<Args> {
    let mut args = Args {
        model: None,
        images: Vec::new(),
        budget: None,
        dtype: ComputeDtype::Native,
        runs: 3,
        out: None,
        gemm: false,
        floor: false,
    };
    let mut it = argv.into_iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"));
        match flag.as_str() {
            "--model" => args.model = Some(value()?.into()),
            "--image" => args.images.push(value()?.into()),
            "--out" => args.out = Some(value()?.into()),
            "--budget" => args.budget = Some(value()?.parse().map_err(|e| format!("{flag}: {e}"))?),
            "--runs" => args.runs = positive(&flag, &value()?)? as usize,
            "--dtype" => args.dtype = value()?.parse().map_err(|e| format!("--dtype: {e}"))?,
            "--gemm" => args.gemm = true,
            "--floor" => args.floor = true,
            other => return Err(format!("unknown argument `{other}`\n{USAGE}").into()),
        }
    }
    if !args.gemm && !args.floor && (args.model.is_none() || args.images.is_empty()) {
        return Err(format!("--model and at least one --image are required\n{USAGE}").into());
    }
    Ok(args)
}

fn positive(flag: &str, text: &str) -> Result<u32> {
    match text.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{flag}: `{text}` is not a positive integer").into()),
    }
}

fn bench(args: &Args) -> Result<()> {
    let model = args.model.as_ref().ok_or(USAGE)?;
    // As the `gemma-vision` command does.
    tensor::memory::retain_freed_host_memory();
    let start = Instant::now();
    let encoder =
        VisionEncoder::load(model, EncoderOptions { compute_dtype: args.dtype, ..EncoderOptions::default() })?;
    let load_seconds = start.elapsed().as_secs_f64();

    let mut seconds = Vec::with_capacity(args.runs);
    let mut last = None;
    for _ in 0..args.runs {
        let start = Instant::now();
        let out = encoder.encode_files(&args.images, args.budget)?;
        out.features.eval()?;
        seconds.push(start.elapsed().as_secs_f64());
        last = Some(out);
    }
    let out = last.ok_or("no runs")?;
    if let Some(path) = &args.out {
        tensor::save_safetensors(path, &[("features", &out.features)], None)?;
    }
    let mut sorted = seconds.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let dtype = match args.dtype {
        ComputeDtype::Native => "native",
        ComputeDtype::F32 => "float32",
    };
    let join = |items: Vec<String>| items.join(", ");
    println!(
        "{{\"side\": \"ours\", \"dtype\": \"{dtype}\", \"load_seconds\": {load_seconds:.6}, \"seconds\": [{}], \
         \"median\": {median:.6}, \"soft_tokens\": [{}], \"features_shape\": [{}], \"features_dtype\": \"{}\", \
         \"peak_rss_bytes\": {}, \"mlx_peak_bytes\": {}}}",
        join(seconds.iter().map(|s| format!("{s:.6}")).collect()),
        join(out.soft_tokens.iter().map(usize::to_string).collect()),
        join(out.features.shape().iter().map(i32::to_string).collect()),
        out.features.dtype(),
        peak_rss_bytes().map_or("null".to_owned(), |b| b.to_string()),
        tensor::memory::peak_memory()?,
    );
    Ok(())
}

/// Best float32 GFLOP/s of `A[M, K] · B[K, N]` (B stored transposed, as a linear's weight is)
/// for square and tower shapes; prints them and their maximum as one JSON line.
fn gemm_peak() -> Result<()> {
    const SHAPES: [(i32, i32, i32); 5] =
        [(1024, 1024, 1024), (2048, 2048, 2048), (2520, 768, 768), (2520, 768, 3072), (2520, 3072, 768)];
    let mut entries = Vec::new();
    let mut peak = 0.0f64;
    for (m, k, n) in SHAPES {
        let fill = |count: i32, salt: i32| -> Vec<f32> {
            (0..count).map(|i| (((i * 31 + salt) % 97) as f32 - 48.0) / 97.0).collect()
        };
        let a = Array::from_slice(&fill(m * k, 1), &[m, k])?.astype(Dtype::F32)?;
        let w = Array::from_slice(&fill(n * k, 7), &[n, k])?;
        let wt = w.t()?;
        Array::eval_all(&[&a, &w])?;
        a.matmul(&wt)?.eval()?;
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let start = Instant::now();
            a.matmul(&wt)?.eval()?;
            best = best.min(start.elapsed().as_secs_f64());
        }
        let gflops = 2.0 * f64::from(m) * f64::from(k) * f64::from(n) / best / 1e9;
        peak = peak.max(gflops);
        entries.push(format!("{{\"m\": {m}, \"k\": {k}, \"n\": {n}, \"gflops\": {gflops:.2}}}"));
    }
    println!("{{\"gemm\": [{}], \"peak_gflops\": {peak:.2}}}", entries.join(", "));
    Ok(())
}

/// The exactness floor's rates on every core (see the module doc), as one JSON line.
fn floor() -> Result<()> {
    use kernels::peak::{Probe, rate};
    let isa = kernels::cpu::isa();
    let threads = kernels::parallel::threads();
    let mut isas = vec![isa];
    if isa.at_most_avx2() != isa {
        isas.push(isa.at_most_avx2());
    }
    let entries: Vec<String> = isas
        .into_iter()
        .map(|isa| {
            let [fused, separate, exp] =
                Probe::ALL.map(|probe| rate(probe, isa, threads, std::time::Duration::from_millis(400), 5));
            format!(
                "{{\"isa\": \"{isa}\", \"fused_gflops\": {:.2}, \"separate_gflops\": {:.2}, \"exp_per_ns\": {:.4}}}",
                2.0 * fused / 1e9,
                2.0 * separate / 1e9,
                exp / 1e9
            )
        })
        .collect();
    println!("{{\"kernels\": \"{isa}\", \"threads\": {threads}, \"isas\": [{}]}}", entries.join(", "));
    Ok(())
}

/// The process's peak resident set (VmHWM), in bytes.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    Some(line.trim().trim_end_matches("kB").trim().parse::<u64>().ok()? * 1024)
}

//! `cargo xtask parity ops`: every block of the `layers` crate against the reference's own
//! modules (crates/parity/python/ops.py), at the real E2B shapes, in bf16 and f32.
//!
//! Usage: `parity-ops <dir> [ignored args]`. `<dir>/manifest.json` lists the entries ops.py
//! wrote (case, dtype label, block kind, dimensions, file); each file holds the block's weights
//! under mlx-vlm's key names (`weights.*`), its inputs (`in.*`) and the reference's `out`. One
//! table row per entry and execution: MLX's ops, and, for every block with a host path, the
//! host kernels (the row names the kernels that ran; only where the run compares on the CPU,
//! see [`parity::device`]); a block that fails, or leaves a weight unused, is a non-exact row
//! that says why.

use layers::{
    ClippableLinear, Execution, GegluMlp, LayerNorm, Linear, RmsNorm, RopeTables, VisionAttention, VisionBlock,
    VisionBlockConfig, VisionRmsNorm, Weights, ensure_fused_sdpa, gelu_approx, take_kernels_run,
};
use parity::{Comparison, Table, compare_arrays};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;
use tensor::{Array, Device, ShardedSafetensors};

type BoxError = Box<dyn std::error::Error>;

fn main() -> ExitCode {
    let Some(dir) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: parity-ops <dir written by ops.py>");
        return ExitCode::FAILURE;
    };
    match run(&dir) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("parity-ops: {e}");
            println!("parity-summary: 0/1");
            ExitCode::FAILURE
        }
    }
}

fn run(dir: &Path) -> Result<bool, BoxError> {
    let manifest_path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&manifest_path).map_err(|e| format!("{}: {e}", manifest_path.display()))?;
    let manifest: Vec<Value> = serde_json::from_str(&text)?;
    let mut table = Table::new("Op parity: layers blocks vs mlx-vlm 0.7.10's own modules and functions (same libmlx)");
    // The host kernels give MLX's CPU bits: they are compared where the reference runs on the CPU.
    let executions: &[Execution] = match parity::device::compared_on()? {
        Device::Cpu => &[Execution::Mlx, Execution::Host],
        Device::Gpu => &[Execution::Mlx],
    };
    for entry in &manifest {
        let case = format!("{} {}", text_field(entry, "case")?, text_field(entry, "label")?);
        for &execution in executions {
            let start = Instant::now();
            let row = match compare_entry(dir, entry, &case, execution) {
                Ok(Some(row)) => row,
                Ok(None) => continue,
                Err(e) => failed_row(&format!("{case} ({execution:?})"), &e.to_string()),
            };
            eprintln!("  ours      {:<60} {:8.3} s", row.name, start.elapsed().as_secs_f64());
            table.push(row);
        }
    }
    Ok(table.finish())
}

/// One row: the entry computed by `execution`; `None` for a function-level entry without a host
/// path of its own (its kernel runs, and is compared, inside the blocks that use it).
fn compare_entry(dir: &Path, entry: &Value, case: &str, execution: Execution) -> Result<Option<Comparison>, BoxError> {
    let file = dir.join(text_field(entry, "file")?);
    let store = Arc::new(ShardedSafetensors::open(&file)?);
    let weights = Weights::new(store.clone()).with_execution(execution).pp("weights");
    let input = |key: &str| -> Result<Array, BoxError> { Ok(store.load(&format!("in.{key}"))?) };
    let _ = take_kernels_run();
    let Some(ours) = forward(text_field(entry, "block")?, &entry["dims"], &weights, &input, execution)? else {
        return Ok(None);
    };
    ours.eval()?;
    let name = match execution {
        Execution::Mlx => format!("{case} (MLX ops)"),
        Execution::Host => format!("{case} (host: {})", kernel_names(&take_kernels_run())),
    };
    let unused = weights.unused_keys();
    if !unused.is_empty() {
        return Ok(Some(failed_row(&name, &format!("unused weights {unused:?}"))));
    }
    Ok(Some(compare_arrays(&name, &ours, &store.load("out")?)?))
}

/// Builds the entry's block from its weights (whose view carries `execution`) and runs it on its
/// inputs (`None`: a function-level entry, which only MLX's ops compute on their own).
fn forward(
    block: &str,
    dims: &Value,
    weights: &Weights,
    input: &dyn Fn(&str) -> Result<Array, BoxError>,
    execution: Execution,
) -> Result<Option<Array>, BoxError> {
    let function_level = matches!(block, "vision_rms_norm" | "gelu_approx" | "rope" | "sdpa");
    if function_level && execution == Execution::Host {
        return Ok(None);
    }
    Ok(Some(match block {
        "linear" => {
            Linear::load(weights, int(dims, "in")?, int(dims, "out")?, flag(dims, "bias")?)?.forward(&input("x")?)?
        }
        "clippable_linear" => {
            ClippableLinear::load(weights, int(dims, "in")?, int(dims, "out")?, flag(dims, "clipped")?)?
                .forward(&input("x")?)?
        }
        "rms_norm" => {
            let eps = float(dims, "eps")? as f32;
            let norm = if flag(dims, "scaled")? {
                RmsNorm::load(weights, int(dims, "dim")?, eps)?
            } else {
                RmsNorm::no_scale(eps, execution)
            };
            norm.forward(&input("x")?)?
        }
        "vision_rms_norm" => {
            let norm = if flag(dims, "scaled")? {
                VisionRmsNorm::load(weights, int(dims, "dim")?)?
            } else {
                VisionRmsNorm::no_scale(execution)
            };
            norm.forward(&input("x")?)?
        }
        "layer_norm" => {
            LayerNorm::load(weights, int(dims, "dim")?, float(dims, "eps")? as f32)?.forward(&input("x")?)?
        }
        "gelu_approx" => gelu_approx(&input("x")?)?,
        "geglu_mlp" => {
            GegluMlp::load(weights, int(dims, "hidden")?, int(dims, "intermediate")?, flag(dims, "clipped")?)?
                .forward(&input("x")?)?
        }
        "rope" => {
            let x = input("x")?;
            RopeTables::new(&input("positions")?, int(dims, "head_dim")?, float(dims, "theta")?, x.dtype())?
                .apply(&x)?
        }
        "sdpa" => ensure_fused_sdpa(
            &input("q")?,
            &input("k")?,
            &input("v")?,
            float(dims, "scale")? as f32,
            Some(&input("mask")?),
        )?,
        "vision_attention" => {
            let config = block_config(dims)?;
            let x = input("x")?;
            let rope = config.rope_tables(&input("positions")?, x.dtype())?;
            VisionAttention::load(weights, &config)?.forward(&x, &rope, Some(&input("mask")?))?
        }
        "vision_block" => {
            let config = block_config(dims)?;
            let x = input("x")?;
            let rope = config.rope_tables(&input("positions")?, x.dtype())?;
            VisionBlock::load(weights, &config)?.forward(&x, &rope, Some(&input("mask")?))?
        }
        other => return Err(format!("unknown block kind `{other}`").into()),
    }))
}

/// The kernels' names, comma-separated.
fn kernel_names(kernels: &[layers::HostKernel]) -> String {
    kernels.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
}

fn block_config(dims: &Value) -> Result<VisionBlockConfig, BoxError> {
    Ok(VisionBlockConfig {
        hidden_size: int(dims, "hidden_size")?,
        intermediate_size: int(dims, "intermediate_size")?,
        num_heads: int(dims, "num_heads")?,
        num_kv_heads: int(dims, "num_kv_heads")?,
        head_dim: int(dims, "head_dim")?,
        rms_norm_eps: float(dims, "rms_norm_eps")?,
        rope_theta: float(dims, "rope_theta")?,
        clipped_linears: flag(dims, "clipped_linears")?,
    })
}

fn failed_row(name: &str, why: &str) -> Comparison {
    Comparison {
        name: name.to_owned(),
        what: format!("error: {why}"),
        max_abs_diff: f64::INFINITY,
        rel_rmse: f64::INFINITY,
        differing: 0,
        total: 0,
        bit_exact: false,
    }
}

fn text_field<'a>(value: &'a Value, key: &str) -> Result<&'a str, BoxError> {
    value[key].as_str().ok_or_else(|| format!("manifest: `{key}` is not a string in {value}").into())
}

fn int(dims: &Value, key: &str) -> Result<i32, BoxError> {
    let value = dims[key].as_i64().ok_or_else(|| format!("manifest: dims.{key} is not an integer"))?;
    Ok(i32::try_from(value)?)
}

fn float(dims: &Value, key: &str) -> Result<f64, BoxError> {
    Ok(dims[key].as_f64().ok_or_else(|| format!("manifest: dims.{key} is not a number"))?)
}

fn flag(dims: &Value, key: &str) -> Result<bool, BoxError> {
    Ok(dims[key].as_bool().ok_or_else(|| format!("manifest: dims.{key} is not a boolean"))?)
}

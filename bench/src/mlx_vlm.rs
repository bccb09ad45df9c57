//! `cargo xtask bench mlx-vlm`: mlx-vlm's own generation (`stream_generate`), stock and after
//! `gemma_vision.mlx_vlm.accelerate`, on one model in one process: the time to the first token,
//! the decode rate and whether the tokens are identical, written into the `mlx-vlm` section of
//! BENCHMARKS.md from `bench/templates/mlx-vlm.md`.
//!
//! The run is `bench/python/mlx_vlm_generate.py` on the release wheel (built and installed
//! into `.deps/venv`): an e2b-shaped checkpoint by default (e2b's vision tower at budget 280
//! beside a small language model), or `--shape tiny` to try the harness in seconds.

use crate::Setup;
use crate::machine::{Load, Machine};
use crate::{template, wheel, write_section};
use project::{Result, cmd, output, python, root, work_dir};
use serde_json::Value;

/// What the command line selects.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkpoint: e2b (e2b's vision tower at budget 280, a 2-layer language model) or tiny
    #[arg(long, default_value = "e2b", value_parser = ["e2b", "tiny"])]
    shape: String,
    /// Tokens decoded per run
    #[arg(long, default_value_t = 32)]
    tokens: usize,
}

pub fn main(args: &Args, setup: Setup) -> Result<()> {
    setup()?;
    let dir = work_dir("bench/mlx-vlm")?;
    let load = Load::start();
    wheel::install_release_wheel(&dir)?;
    eprintln!("bench mlx-vlm: stream_generate, {} checkpoint, stock then accelerated", args.shape);
    let script = root().join("bench/python/mlx_vlm_generate.py");
    let mut command = cmd(python(), &[]);
    command.arg(script).arg("--out").arg(&dir).args(["--shape", &args.shape, "--tokens", &args.tokens.to_string()]);
    let printed = output(command)?;
    let last = printed.lines().last().unwrap_or_default();
    let run: Value = serde_json::from_str(last).map_err(|e| format!("the bench printed no result ({e}): {printed}"))?;
    let field = |path: &[&str]| -> Result<&Value> {
        path.iter().try_fold(&run, |v, key| v.get(key).ok_or_else(|| format!("the result lacks `{}`", path.join("."))))
    };
    let number = |path: &[&str]| -> Result<f64> {
        field(path)?.as_f64().ok_or_else(|| format!("`{}` is not a number", path.join(".")))
    };
    let row = |name: &str, side: &str| -> Result<String> {
        let tokens = field(&[side, "tokens"])?.as_array().map_or(0, Vec::len);
        Ok(format!(
            "| {name} | {:.2} s | {:.1} | {tokens} |",
            number(&[side, "ttft"])?,
            number(&[side, "generation_tps"])?
        ))
    };
    let table = format!(
        "| run | time to first token | decode tokens/s | tokens |\n| --- | ---: | ---: | ---: |\n{}\n{}",
        row("mlx-vlm 0.7.10, stock", "stock")?,
        row("accelerated (`gemma_vision.mlx_vlm.accelerate`)", "accelerated")?
    );
    let identical = match field(&["identical_tokens"])?.as_bool() {
        Some(true) => "yes, every token".to_owned(),
        _ => "**no**".to_owned(),
    };
    let checkpoint = match args.shape.as_str() {
        "e2b" => "e2b's vision tower (16 layers, 768 wide, 12 heads of 64, clipped linears) and projector, \
                  random bf16 weights, beside a 2-layer 1536-wide language model"
            .to_owned(),
        other => format!("the `{other}` checkpoint of `mlx_vlm_generate.py`"),
    };
    let text = |path: &[&str]| -> Result<String> { Ok(field(path)?.as_str().unwrap_or_default().to_owned()) };
    let section = template::render(
        "mlx-vlm",
        &[
            ("machine", format!("{}.", Machine::read().describe())),
            ("load", load.finish().describe()),
            ("checkpoint", checkpoint),
            ("image", text(&["image"])?),
            ("budget", number(&["budget"])?.to_string()),
            ("prompt_tokens", number(&["stock", "prompt_tokens"])?.to_string()),
            ("tokens", args.tokens.to_string()),
            ("accelerate", format!("{:.1}", number(&["accelerate_seconds"])?)),
            ("speedup", format!("{:.0}", number(&["stock", "ttft"])? / number(&["accelerated", "ttft"])?)),
            ("table", table),
            ("identical", identical),
        ],
    )?;
    println!("{section}");
    write_section("mlx-vlm", &section)?;
    eprintln!("bench mlx-vlm: wrote the `mlx-vlm` section of BENCHMARKS.md");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_choices() {
        let args: Args = crate::parse_suite_args("mlx-vlm", &[]).unwrap();
        assert_eq!((args.shape.as_str(), args.tokens), ("e2b", 32));
        let args: Args = crate::parse_suite_args("mlx-vlm", &["--shape", "tiny", "--tokens", "4"]).unwrap();
        assert_eq!((args.shape.as_str(), args.tokens), ("tiny", 4));
        assert!(crate::parse_suite_args::<Args>("mlx-vlm", &["--shape", "e4b"]).is_err());
    }
}

//! Running the sides: building their programs, one process per (model, case, side) that loads
//! once and times `--runs` encodes, and comparing every side's features with mlx-vlm's.

use super::store::{Comparison, Measurement, Store};
use super::{Case, Model, Side, Table, flops, llama};
use crate::exact_floor::ExactFloor;
use crate::machine::{cores, load_average_1min};
use project::stack::Stack;
use project::{Result, output, root, run};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The programs the selected sides run, and the stack they run on.
#[derive(Debug)]
pub struct Tools {
    stack: Stack,
    ours: PathBuf,
    candle: PathBuf,
    llama: Option<llama::Llama>,
}

impl Tools {
    /// Builds what `sides` need on `stack`: our side (`bench/encode`, which also measures the
    /// exactness floor, so always), candle's bench crate, llama.cpp and its driver.
    pub fn build(stack: &Stack, sides: &[Side]) -> Result<Tools> {
        eprintln!("bench e2e: building our side (bench/encode)");
        let mut cargo = stack.cargo();
        run(cargo.args(["build", "--release", "-p", "bench-encode"]))?;
        if sides.contains(&Side::Candle) {
            eprintln!("bench e2e: building bench/candle-gemma4 (candle-transformers 0.11.1; minutes on a cold build)");
            // Its own workspace: without `--target-dir` cargo would build under bench/candle-gemma4/.
            let manifest = root().join("bench/candle-gemma4/Cargo.toml");
            run(stack
                .cargo()
                .args(["build", "--release", "--manifest-path"])
                .arg(manifest)
                .arg("--target-dir")
                .arg(&stack.target_dir))?;
        }
        let llama = if sides.iter().any(|s| s.gguf_type().is_some()) { Some(llama::Llama::build()?) } else { None };
        Ok(Tools {
            ours: stack.release_binary("bench_encode"),
            candle: stack.release_binary("candle-gemma4-bench"),
            llama,
            stack: stack.clone(),
        })
    }

    /// The exactness floor's rates on this machine ([`ExactFloor::measure`]).
    pub fn floor(&self) -> Result<ExactFloor> {
        ExactFloor::measure(self.stack.ours(&self.ours))
    }

    /// `bench/python/bench_e2e.py` in the stack's reference Python, writing under `dir`.
    pub fn reference_python(&self, dir: &Path) -> Command {
        let mut command = self.stack.reference(&root().join("bench/python/bench_e2e.py"));
        command.arg("--out").arg(dir);
        command
    }
}

/// Runs sides and compares features for one invocation of the bench.
#[derive(Debug)]
pub struct Runner<'a> {
    dir: PathBuf,
    tools: &'a Tools,
    run_id: u32,
    runs: u32,
    reference_runs: u32,
    mlx_version: Option<String>,
}

impl<'a> Runner<'a> {
    pub fn new(dir: &Path, tools: &'a Tools, run_id: u32, runs: u32, reference_runs: u32) -> Result<Runner<'a>> {
        for sub in ["features", "pixels", "gguf"] {
            let path = dir.join(sub);
            fs::create_dir_all(&path).map_err(|e| format!("creating {}: {e}", path.display()))?;
        }
        Ok(Runner { dir: dir.to_path_buf(), tools, run_id, runs, reference_runs, mlx_version: None })
    }

    /// The MLX version an mlx-vlm side reported, if one ran.
    pub fn mlx_version(&self) -> Option<String> {
        self.mlx_version.clone()
    }

    /// Runs `side` on `model` and `case` and reads its JSON line.
    pub fn measure(&mut self, model: &Model, case: &Case, side: Side) -> Result<Measurement> {
        // The mlx-vlm towers take minutes per encode on the stock wheels; the unified embedder
        // takes under a second on every side.
        let runs = if side.is_mlx_vlm() && !model.unified { self.reference_runs } else { self.runs };
        let features = self.dir.join("features").join(format!("{}_{}_{}.safetensors", model.name, case.id, side.id()));
        let _ = fs::remove_file(&features);
        let images: Vec<PathBuf> = case.images.iter().map(|i| self.dir.join("images").join(i)).collect();
        let budget = case.budget.to_string();
        let mut command = match side {
            Side::OursNative | Side::OursF32 => {
                let mut c = self.tools.stack.ours(&self.tools.ours);
                c.args(["--dtype", if side == Side::OursF32 { "f32" } else { "native" }]);
                c.arg("--model").arg(&model.dir).arg("--out").arg(&features);
                c
            }
            Side::Candle => {
                let mut c = Command::new(&self.tools.candle);
                c.arg("--model").arg(&model.dir).arg("--out").arg(&features);
                c
            }
            Side::MlxBf16 | Side::MlxF32 => {
                let mut c = self.tools.reference_python(&self.dir);
                c.args(["run", "--dtype", if side == Side::MlxF32 { "float32" } else { "bfloat16" }]);
                c.arg("--model").arg(&model.dir).arg("--save").arg(&features);
                c
            }
            Side::LlamaF32 | Side::LlamaF16 | Side::LlamaQ8 | Side::LlamaBf16 => {
                let llama = self.tools.llama.as_ref().ok_or("llama.cpp was not built")?;
                let gguf_type = side.gguf_type().ok_or("a llama.cpp side without a GGUF type")?;
                let gguf = llama.mmproj(model, gguf_type, &self.dir.join("gguf"))?;
                let mut c = Command::new(llama.driver());
                c.arg("--mmproj").arg(gguf).args(["--threads", &cores().to_string()]).arg("--out").arg(&features);
                // llama.cpp's own token limit at the budget; its preprocessing of each file's size
                // is reported beside the tokens of the reference's pixels it encodes.
                c.args(["--image-max-tokens", &budget]);
                for image in &images {
                    c.arg("--pixels").arg(self.pixels(model, image, case.budget)?);
                    c.args(["--source-size", &case.size_arg()]);
                }
                c
            }
        };
        if side.gguf_type().is_none() {
            for image in &images {
                command.arg("--image").arg(image);
            }
            command.args(["--budget", &budget]);
        }
        command.args(["--runs", &runs.to_string()]);
        let load_average = load_average_1min();
        eprintln!(
            "bench e2e: {} {} : {} ({runs} run(s)), load average {load_average:.2}",
            model.name,
            case.id,
            side.label()
        );
        let text = output(&mut command)?;
        let line = text.lines().rev().find(|l| l.starts_with('{')).unwrap_or_default();
        let json: Value = serde_json::from_str(line).map_err(|e| format!("{}: printed `{text}`: {e}", side.id()))?;
        if let Some(version) = json["mlx"].as_str() {
            self.mlx_version = Some(version.to_owned());
        }
        let measurement = parse_measurement(&json, side, model, case, features, self.run_id, load_average)?;
        // For an image larger than its budget (the high-budget cases), llama.cpp's own resize
        // under its token limit lands on the reference's grid; if it did not, its rows would
        // not be the work a llama.cpp user gets at that budget.
        if let Some(own) = measurement.own_soft_tokens.filter(|_| case.table == Table::HighBudget)
            && own != measurement.soft_tokens
        {
            return Err(format!(
                "{} {}: llama.cpp's own preprocessing at --image-max-tokens {} makes {own} soft tokens, the \
                 reference's {}",
                model.name, case.id, case.budget, measurement.soft_tokens
            ));
        }
        eprintln!(
            "bench e2e:   median {:.3} s, load {:.3} s, peak RSS {} MiB",
            measurement.median,
            measurement.load_seconds,
            measurement.peak_rss_bytes.map_or("?".to_owned(), |b| format!("{:.0}", b / 1024.0 / 1024.0))
        );
        Ok(measurement)
    }

    /// The reference image processor's pixels of `image` at `budget`, for llama.cpp's driver.
    fn pixels(&self, model: &Model, image: &Path, budget: u32) -> Result<PathBuf> {
        let stem = image.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let path = self.dir.join("pixels").join(format!("{}_{stem}_{budget}.pix", model.name));
        let mut command = self.tools.reference_python(&self.dir);
        command.arg("pixels").arg("--model").arg(&model.dir).arg("--image").arg(image);
        command.args(["--budget", &budget.to_string()]).arg("--save").arg(&path);
        output(command)?;
        Ok(path)
    }

    /// Compares the features of every side of a row with the bf16 reference's and with the
    /// float32 reference's (those present), recording the result in each measurement: mlx-vlm
    /// bf16 and f32, or in the high-budget table, where mlx-vlm does not run, ours native and
    /// f32 (bit-exact with them: parity's `long-1120` rows).
    pub fn compare_row(&self, store: &mut Store, model: &Model, case: &Case) -> Result<()> {
        let references = match case.table {
            Table::Standard => [Side::MlxBf16, Side::MlxF32],
            Table::HighBudget => [Side::OursNative, Side::OursF32],
        };
        for (index, reference) in references.into_iter().enumerate() {
            let results = match store.find(&model.name, case.id, reference) {
                Some(found) if found.features.is_file() => {
                    let others: Vec<PathBuf> = store
                        .measurements
                        .iter()
                        .filter(|m| m.model == model.name && m.case == case.id && m.side != reference)
                        .map(|m| m.features.clone())
                        .filter(|f| f.is_file())
                        .collect();
                    let mut results = vec![(found.features.clone(), Comparison::Reference)];
                    if !others.is_empty() {
                        results.extend(self.compare(&found.features, &others)?);
                    }
                    results
                }
                _ => Vec::new(),
            };
            for m in store.measurements.iter_mut().filter(|m| m.model == model.name && m.case == case.id) {
                let result = results.iter().find(|(f, _)| *f == m.features).map(|(_, c)| c.clone());
                if index == 0 {
                    m.versus_bf16 = result;
                } else {
                    m.versus_f32 = result;
                }
            }
        }
        Ok(())
    }

    /// `bench_e2e.py compare` of `files` against `reference`.
    fn compare(&self, reference: &Path, files: &[PathBuf]) -> Result<Vec<(PathBuf, Comparison)>> {
        let mut command = self.tools.reference_python(&self.dir);
        command.arg("compare").arg("--reference").arg(reference).args(files);
        let text = output(command)?;
        text.lines().filter(|l| l.starts_with('{')).map(parse_comparison).collect()
    }
}

/// One line of `bench_e2e.py compare`.
fn parse_comparison(line: &str) -> Result<(PathBuf, Comparison)> {
    let json: Value = serde_json::from_str(line).map_err(|e| format!("bench_e2e.py compare printed `{line}`: {e}"))?;
    let file = PathBuf::from(json["file"].as_str().unwrap_or_default());
    let comparison = if let Some(error) = json["error"].as_str() {
        Comparison::NotComparable(error.to_owned())
    } else if json["exact"].as_bool() == Some(true) {
        Comparison::Exact
    } else {
        let rmse = json["relative_rmse"].as_f64().ok_or_else(|| format!("no relative_rmse in `{line}`"))?;
        Comparison::RelativeRmse(rmse)
    };
    Ok((file, comparison))
}

/// The JSON line of `bench_encode`, `bench_e2e.py run`, `candle-gemma4-bench` or
/// `encode_image` as a [`Measurement`].
fn parse_measurement(
    json: &Value,
    side: Side,
    model: &Model,
    case: &Case,
    features: PathBuf,
    run: u32,
    load_average: f64,
) -> Result<Measurement> {
    let number = |key: &str| json[key].as_f64().ok_or_else(|| format!("{}: no `{key}` in {json}", side.id()));
    let numbers = |key: &str| -> Vec<f64> {
        json[key].as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default()
    };
    let seconds = numbers("seconds");
    let soft_tokens: f64 = numbers("soft_tokens").iter().sum();
    let own_soft_tokens = numbers("own_soft_tokens");
    Ok(Measurement {
        run,
        model: model.name.clone(),
        case: case.id.to_owned(),
        side,
        runs: seconds.len(),
        median: number("median")?,
        load_seconds: number("load_seconds")?,
        first: seconds.first().copied().unwrap_or(f64::NAN),
        // (llama.cpp's driver prints -1 when it cannot read VmHWM.)
        peak_rss_bytes: json["peak_rss_bytes"].as_f64().filter(|bytes| *bytes >= 0.0),
        mlx_peak_bytes: json["mlx_peak_bytes"].as_f64(),
        soft_tokens,
        own_soft_tokens: (!own_soft_tokens.is_empty()).then(|| own_soft_tokens.iter().sum()),
        images: case.images.len(),
        flops: Some(flops::count(model, soft_tokens, case.images.len(), case.budget)?),
        exps: Some(flops::exps(model, soft_tokens, case.images.len(), case.budget)?),
        load_average,
        features,
        versus_bf16: None,
        versus_f32: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measurement_lines_parse() {
        let model = super::super::parse_models(
            r#"{"model": "u", "model_type": "gemma4_unified", "dir": "m", "text_hidden": 8, "patch_dim": 4, "embed": 2, "output": 2}"#,
        )
        .unwrap()
        .remove(0);
        let case = &super::super::CASES[0];
        let line = r#"{"side": "ours", "load_seconds": 0.5, "seconds": [3.0, 1.0, 2.0], "median": 2.0, "soft_tokens": [63, 7], "own_soft_tokens": [], "peak_rss_bytes": 1048576, "mlx_peak_bytes": 2097152}"#;
        let json: Value = serde_json::from_str(line).unwrap();
        let m = parse_measurement(&json, Side::OursF32, &model, case, PathBuf::from("f"), 4, 1.5).unwrap();
        assert_eq!((m.runs, m.median, m.load_seconds, m.soft_tokens, m.first), (3, 2.0, 0.5, 70.0, 3.0));
        assert_eq!((m.peak_rss_bytes, m.mlx_peak_bytes, m.run), (Some(1048576.0), Some(2097152.0), 4));
        assert_eq!(m.own_soft_tokens, None);
        let llama = r#"{"load_seconds": 0.1, "seconds": [1.0], "median": 1.0, "soft_tokens": [1064], "own_soft_tokens": [1064]}"#;
        let json: Value = serde_json::from_str(llama).unwrap();
        let m = parse_measurement(&json, Side::LlamaF16, &model, case, PathBuf::from("f"), 4, 1.5).unwrap();
        assert_eq!((m.soft_tokens, m.own_soft_tokens, m.peak_rss_bytes), (1064.0, Some(1064.0), None));
        assert_eq!(m.flops, Some(2.0 * 70.0 * 4.0 * 2.0 + 2.0 * 70.0 * 2.0 * 8.0));
        let json: Value = serde_json::from_str(r#"{"side": "candle"}"#).unwrap();
        assert!(parse_measurement(&json, Side::Candle, &model, case, PathBuf::from("f"), 1, 1.0).is_err());
    }

    #[test]
    fn comparison_lines_parse() {
        let (file, c) = parse_comparison(r#"{"file": "a", "relative_rmse": 0.5, "exact": false}"#).unwrap();
        assert_eq!((file, c), (PathBuf::from("a"), Comparison::RelativeRmse(0.5)));
        assert_eq!(
            parse_comparison(r#"{"file": "a", "relative_rmse": 0.0, "exact": true}"#).unwrap().1,
            Comparison::Exact
        );
        assert_eq!(
            parse_comparison(r#"{"file": "a", "error": "shape"}"#).unwrap().1,
            Comparison::NotComparable("shape".to_owned())
        );
        assert!(parse_comparison(r#"{"file": "a"}"#).is_err());
    }
}

//! The vision suite: both encoders, every stage, from the image files and checkpoints the
//! reference side wrote (`crates/parity/python/vision.py`), compared row by row.
//!
//! Quantized cases add a row comparing the set of quantized vision modules with the
//! reference's; `compute: "float32"` cases load with [`ComputeDtype::F32`], which is what
//! mlx-vlm computes on the model cast to float32. Our side runs the encoder with the
//! [`Kernels`] it is given: as a user gets it ([`Kernels::Auto`]), or MLX's ops or the host
//! kernels forced; each run's `features` row names the kernels that ran.

use crate::{Table, compare_arrays, compare_bytes};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use vision::{ComputeDtype, EncoderOptions, Kernels, PreparedImage, Trace, VisionEncoder};

/// Any failure of the suite itself (a missing file, a load error): not a parity row.
pub type SuiteError = Box<dyn std::error::Error>;

#[derive(Deserialize)]
struct Manifest {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    model_type: String,
    dtype: String,
    runs: Vec<Run>,
    /// `"float32"`: the reference ran on the model cast to float32.
    #[serde(default)]
    compute: Option<String>,
    /// The vision modules the reference loaded as `nn.QuantizedLinear`.
    #[serde(default)]
    quantized: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct Run {
    name: String,
    images: Vec<String>,
    budget: preprocess::SoftTokenBudget,
    padded: Option<usize>,
    /// The images are the frames of one video, through the video processor and video path.
    #[serde(default)]
    video: bool,
    stages: Vec<String>,
}

/// Runs every case of `<dir>/manifest.json`: loads `<case>/model` with [`VisionEncoder`] and
/// `kernels`, runs each run's images through our full path (decode → preprocess → encoder; a
/// video run's images as the frames of one video, through [`VisionEncoder::prepare_video`])
/// with a [`Trace`], and pushes one row per stage the reference recorded in
/// `<case>/reference.safetensors`.
pub fn run_manifest(dir: &Path, kernels: Kernels, table: &mut Table) -> Result<(), SuiteError> {
    let manifest: Manifest = serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json"))?)?;
    for case in &manifest.cases {
        let case_dir = dir.join(&case.name);
        let compute_dtype = match case.compute.as_deref() {
            None => ComputeDtype::Native,
            Some(name) => name.parse().map_err(|e| format!("{}: {e}", case.name))?,
        };
        let options = EncoderOptions { compute_dtype, kernels, ..Default::default() };
        let encoder = VisionEncoder::load(case_dir.join("model"), options)?;
        let reference = tensor::load_safetensors(case_dir.join("reference.safetensors"))?;
        let label = match &case.compute {
            Some(compute) => format!("{}, {} as {compute}", case.model_type, case.dtype),
            None => format!("{}, {}", case.model_type, case.dtype),
        };
        if let Some(expected) = &case.quantized {
            let plan = encoder.checkpoint().quantization();
            let ours: Vec<&str> = plan.modules().keys().map(String::as_str).collect();
            let what = format!("{} quantized modules", expected.len());
            let name = format!("{} ({label}) quantized modules", case.name);
            table.push(compare_bytes(&name, &what, ours.join("\n").as_bytes(), expected.join("\n").as_bytes()));
        }
        for run in &case.runs {
            let started = std::time::Instant::now();
            let _ = layers::take_kernels_run();
            let ours = run_ours(&encoder, &case_dir, run)?;
            let seconds = started.elapsed().as_secs_f64();
            let kernels = match layers::take_kernels_run() {
                ran if ran.is_empty() => "MLX ops".to_owned(),
                ran => format!("host: {}", ran.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")),
            };
            for stage in &run.stages {
                let key = format!("{}.{stage}", run.name);
                let expected = reference.get(&key).ok_or_else(|| format!("reference lacks {key}"))?;
                let name = match stage.as_str() {
                    "features" => format!("{} ({label}) {} {stage} [{kernels}]", case.name, run.name),
                    _ => format!("{} ({label}) {} {stage}", case.name, run.name),
                };
                let actual = ours.get(stage).ok_or_else(|| format!("our trace lacks stage {stage} of {}", run.name))?;
                table.push(compare_arrays(&name, actual, expected)?);
            }
            eprintln!("  {}/{}: ours {seconds:.1} s", case.name, run.name);
        }
    }
    Ok(())
}

/// Our full path for one run; returns each traced stage by name, a stage traced again (the next
/// batch's) as `<stage>#<k>` with k counting from 1, as the reference side names them.
fn run_ours(
    encoder: &VisionEncoder,
    case_dir: &Path,
    run: &Run,
) -> Result<BTreeMap<String, tensor::Array>, SuiteError> {
    let limits = encoder.options().limits;
    let decoded = run
        .images
        .iter()
        .map(|image| preprocess::open(case_dir.join(image), &limits))
        .collect::<Result<Vec<_>, _>>()?;
    let prepared = if run.video {
        encoder.prepare_video(&decoded, &encoder.video_preprocessor(Some(run.budget))?)?
    } else {
        let preprocessor = encoder.preprocessor(Some(run.budget))?;
        decoded
            .iter()
            .map(|decoded| -> Result<PreparedImage, SuiteError> {
                Ok(match run.padded {
                    Some(len) => {
                        PreparedImage::Patches(preprocessor.padded_patches(&preprocessor.resize(decoded)?, len)?)
                    }
                    None => encoder.prepare(decoded, &preprocessor)?,
                })
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    let mut trace = Trace::new();
    trace.encode(encoder, &prepared)?;
    let stages = trace.into_stages();
    tensor::Array::eval_all(&stages.iter().map(|(_, a)| a).collect::<Vec<_>>())?;
    let mut named = BTreeMap::new();
    for (stage, array) in stages {
        let mut key = stage.clone();
        for k in 1.. {
            if !named.contains_key(&key) {
                break;
            }
            key = format!("{stage}#{k}");
        }
        named.insert(key, array);
    }
    Ok(named)
}

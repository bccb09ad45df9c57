//! `cargo xtask parity preprocess`: our decode, resize and encoder inputs against the
//! reference's (mlx-vlm's processors on Pillow), byte for byte.
//!
//! Reads `<dir>/manifest.json` written by `crates/parity/python/preprocess.py` and, for every
//! case, runs the `preprocess` crate on the same file with the same budget. Three rows per case:
//! - `decoded`: the RGB8 image after `load_image` (EXIF orientation applied);
//! - `resized`: after the budget resize (Pillow BICUBIC);
//! - `model input`: gemma4 `pixel_values` f32, the gemma4_unified patches f32, positions i64
//!   and soft-token counts, and for some files the padded-path (video) patches and positions;
//!   exact only when every one of them is.
//!
//! A case the reference rejects (its `load_image` raises) passes when ours rejects it too.
//! The "reference" column ends with the number of differing bytes.
//!
//! Then the corpus rows ([`parity::corpus_suite`]): one per file of Pillow's test images and of
//! its repository's fuzz files, each exact, refused, a known gap, read where Pillow refuses,
//! differ or crashed; each set ends with its line (`corpus: N files: exact A / …`).

use parity::{Comparison, Table, compare_bytes};
use preprocess::{DecodeOptions, Preprocessor, ProcessorConfig};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Deserialize)]
struct Manifest {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    id: String,
    file: PathBuf,
    budget: preprocess::SoftTokenBudget,
    error: Option<String>,
    decoded: Option<Stored>,
    resized: Option<Stored>,
    pixel_values: Option<Stored>,
    soft_tokens: Option<usize>,
    unified_patches: Option<Stored>,
    unified_positions: Option<Stored>,
    unified_soft_tokens: Option<usize>,
    video: Option<Video>,
}

#[derive(Deserialize)]
struct Video {
    budget: preprocess::SoftTokenBudget,
    patches: Stored,
    positions: Stored,
    soft_tokens: usize,
}

#[derive(Deserialize)]
struct Stored {
    shape: Vec<usize>,
    file: String,
}

fn main() -> ExitCode {
    let Some(dir) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: parity-preprocess <dir written by preprocess.py>");
        return ExitCode::FAILURE;
    };
    match run(&dir) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("parity-preprocess: {message}");
            println!("\nparity-summary: 0/1");
            ExitCode::FAILURE
        }
    }
}

fn run(dir: &Path) -> Result<bool, String> {
    let text = std::fs::read_to_string(dir.join("manifest.json")).map_err(|e| format!("manifest.json: {e}"))?;
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| format!("manifest.json: {e}"))?;
    let mut table =
        Table::new("preprocess: ours vs mlx-vlm 0.7.10 + Pillow 13 (differing bytes at the end of column 2)");
    for case in &manifest.cases {
        for row in run_case(dir, case)? {
            table.push(row);
        }
    }
    for set in parity::corpus_suite::SETS {
        parity::corpus_suite::run_corpus(dir, set, &mut table).map_err(|e| format!("{}: {e}", set.label))?;
    }
    Ok(table.finish())
}

fn run_case(dir: &Path, case: &Case) -> Result<Vec<Comparison>, String> {
    let decoded = preprocess::decode(
        &std::fs::read(&case.file).map_err(|e| format!("{}: {e}", case.file.display()))?,
        &DecodeOptions::default(),
    );
    let (Some(ref_decoded), None) = (&case.decoded, &case.error) else {
        // The reference rejected the file.
        let ours = match &decoded {
            Ok(image) => format!("ours decoded {}x{}", image.width(), image.height()),
            Err(e) => format!("ours: {e}"),
        };
        let rejected = decoded.is_err();
        return Ok(vec![outcome(&format!("{} rejected", case.id), &ours, rejected)]);
    };
    let image = match decoded {
        Ok(image) => image,
        Err(e) => return Ok(vec![outcome(&format!("{} decoded", case.id), &format!("ours failed: {e}"), false)]),
    };
    let mut rows = Vec::new();
    let ours_shape = [image.height() as usize, image.width() as usize, 3];
    rows.push(bytes_row(&format!("{} decoded", case.id), dir, ref_decoded, &ours_shape, image.data())?);

    let config = ProcessorConfig::default().with_max_soft_tokens(Some(case.budget));
    let processor = Preprocessor::new(config).map_err(|e| e.to_string())?;
    let (Some(ref_resized), Some(ref_pv), Some(ref_up), Some(ref_pos)) =
        (&case.resized, &case.pixel_values, &case.unified_patches, &case.unified_positions)
    else {
        return Err(format!("{}: manifest entry without outputs", case.id));
    };
    let resized = match processor.resize(&image) {
        Ok(resized) => resized,
        Err(e) => return Ok(vec![outcome(&format!("{} resized", case.id), &format!("ours failed: {e}"), false)]),
    };
    let resized_shape = [resized.height() as usize, resized.width() as usize, 3];
    rows.push(bytes_row(&format!("{} resized", case.id), dir, ref_resized, &resized_shape, resized.data())?);

    // Model inputs: every array and count must match.
    let mut parts: Vec<Comparison> = Vec::new();
    let pv = processor.gemma4_image(&image).map_err(|e| e.to_string())?;
    parts.push(f32_row("pixel_values", dir, ref_pv, &[3, pv.height, pv.width], &pv.data)?);
    parts.push(count_row("soft tokens", pv.soft_tokens, case.soft_tokens));
    let unified = processor.gemma4_unified_image(&image).map_err(|e| e.to_string())?;
    let p = &unified.patches;
    parts.push(f32_row("unified patches", dir, ref_up, &[p.len, p.dim], &p.data)?);
    parts.push(bytes_row("unified positions", dir, ref_pos, &[p.len, 2], &i64_bytes(&p.positions))?);
    parts.push(count_row("unified soft tokens", unified.soft_tokens, case.unified_soft_tokens));
    if let Some(video) = &case.video {
        let vproc = Preprocessor::new(ProcessorConfig::default().with_max_soft_tokens(Some(video.budget)))
            .map_err(|e| e.to_string())?;
        let frame = vproc.gemma4_video_frame(&image).map_err(|e| e.to_string())?;
        parts.push(f32_row("video patches", dir, &video.patches, &[frame.len, frame.dim], &frame.data)?);
        parts.push(bytes_row("video positions", dir, &video.positions, &[frame.len, 2], &i64_bytes(&frame.positions))?);
        let tokens = frame.real / 9;
        parts.push(count_row("video soft tokens", tokens, Some(video.soft_tokens)));
    }
    rows.push(merge(&format!("{} model input", case.id), parts));
    Ok(rows)
}

/// Compares our bytes (and shape) with a stored reference array.
fn bytes_row(name: &str, dir: &Path, stored: &Stored, ours_shape: &[usize], ours: &[u8]) -> Result<Comparison, String> {
    let reference = std::fs::read(dir.join(&stored.file)).map_err(|e| format!("{}: {e}", stored.file))?;
    let mut row = compare_bytes(name, "", ours, &reference);
    if ours_shape != stored.shape.as_slice() {
        row.bit_exact = false;
        row.what = format!("{:?} vs ours {ours_shape:?}", stored.shape);
    } else {
        row.what = format!("{:?} {}/{} differ", stored.shape, row.differing, row.total);
    }
    Ok(row)
}

/// [`bytes_row`] for float32 arrays, with the largest difference measured on the values.
fn f32_row(name: &str, dir: &Path, stored: &Stored, ours_shape: &[usize], ours: &[f32]) -> Result<Comparison, String> {
    let mut row = bytes_row(name, dir, stored, ours_shape, &f32_bytes(ours))?;
    let reference = std::fs::read(dir.join(&stored.file)).map_err(|e| format!("{}: {e}", stored.file))?;
    let values = reference.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let max = ours.iter().zip(values).map(|(a, b)| f64::from((a - b).abs())).fold(0.0, f64::max);
    if row.max_abs_diff.is_finite() {
        row.max_abs_diff = max;
    }
    Ok(row)
}

fn count_row(name: &str, ours: usize, reference: Option<usize>) -> Comparison {
    let exact = Some(ours) == reference;
    outcome(name, &format!("{reference:?} vs ours {ours}"), exact)
}

fn outcome(name: &str, what: &str, exact: bool) -> Comparison {
    Comparison {
        name: name.to_owned(),
        what: what.to_owned(),
        max_abs_diff: if exact { 0.0 } else { f64::INFINITY },
        rel_rmse: if exact { 0.0 } else { f64::INFINITY },
        differing: usize::from(!exact),
        total: 1,
        bit_exact: exact,
    }
}

/// One row for several comparisons: exact when all are; differing bytes added up; the first
/// failing part named.
fn merge(name: &str, parts: Vec<Comparison>) -> Comparison {
    let differing: usize = parts.iter().map(|p| p.differing).sum();
    let total: usize = parts.iter().map(|p| p.total).sum();
    let failing: Vec<String> =
        parts.iter().filter(|p| !p.bit_exact).map(|p| format!("{}: {}", p.name, p.what)).collect();
    let what = if failing.is_empty() { format!("{differing}/{total} differ") } else { failing.join("; ") };
    Comparison {
        name: name.to_owned(),
        what,
        max_abs_diff: parts.iter().map(|p| p.max_abs_diff).fold(0.0, f64::max),
        rel_rmse: parts.iter().map(|p| p.rel_rmse).fold(0.0, f64::max),
        differing,
        total,
        bit_exact: failing.is_empty(),
    }
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn i64_bytes(values: &[i64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

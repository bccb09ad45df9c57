//! The decoders whose bits come from C libraries on aarch64 Linux, under `qemu-aarch64` (a step
//! of `cargo xtask emulate`): OpenJPEG (JPEG 2000) and Little CMS (CIELab TIFF, PSD Lab, IM
//! LAB), which `preprocess` builds from their sources for the target as Pillow's wheels bundle
//! them built for theirs.
//!
//! `crates/parity/python/decoder_bits.py files` writes every case of the fixture sets whose
//! answers those libraries compute (the JPEG 2000 set with its damaged cases, PSD Lab, CIELab
//! TIFF, IM LAB) and a CIELab TIFF of all 2^24 stored triplets, one file each. Then Pillow's answer for
//! each file (`decoder_bits.py answers`) from the aarch64 wheels' Pillow under emulation and
//! from the x86-64 reference natively, and ours from `preprocess`'s `decode_digests` example
//! cross-built in [`PROFILE`] with [`PROFILE_OVERRIDE`] (sharing the encoder step's build of
//! `preprocess`) and run under emulation. The step fails unless ours equals the aarch64 Pillow's
//! on every file (the same refusals, the same RGB bytes); the summary line also counts the
//! files where the two platforms' Pillows disagree. Those must all be JPEG 2000 cases, and
//! their aarch64 answers must be the ones `tests/fixtures/jpeg2000/aarch64.json` records for
//! the JPEG 2000 test on aarch64 Linux (the step writes what it found beside its files, to
//! copy there when a fixture changes).

use crate::emulated_parity::{PROFILE, PROFILE_OVERRIDE};
use project::stack::Stack;
use project::{Result, oracle_python, output, root, run, target_dir};
use std::path::Path;
use std::time::Instant;

/// One file's answer: its name, and its `(width, height, digest)` or `None` for a refusal.
type Answer = (String, Option<(u64, u64, String)>);

/// Runs the step; `qemu` is `qemu-aarch64`, `aarch64` the directory `aarch64_sysroot.py` filled.
pub fn main(qemu: &Path, aarch64: &Path) -> Result<()> {
    let started = Instant::now();
    let stack = Stack::emulated_aarch64(qemu, aarch64, None);
    let script = root().join("crates/parity/python/decoder_bits.py");
    let files = target_dir().join("emulation/decoders");
    if files.exists() {
        std::fs::remove_dir_all(&files).map_err(|e| format!("{}: {e}", files.display()))?;
    }
    run(oracle_python(&script).args(["files", "--out"]).arg(&files))?;

    let mut cargo = stack.cargo();
    cargo.args(["build", "--profile", PROFILE.0, "--config", PROFILE_OVERRIDE]);
    run(cargo.args(["-p", "gemma-vision-preprocess", "--example", "decode_digests"]))?;
    let ours = answers(&output(stack.ours(&stack.binary(PROFILE.1, "examples/decode_digests")).arg(&files))?)?;

    let reference_started = Instant::now();
    let arm = answers(&output(stack.reference(&script).arg("answers").arg(&files))?)?;
    let reference_seconds = reference_started.elapsed().as_secs_f64();
    let x86 = answers(&output(oracle_python(&script).arg("answers").arg(&files))?)?;

    let names = |a: &[Answer]| a.iter().map(|(name, _)| name.clone()).collect::<Vec<_>>();
    if names(&ours) != names(&arm) || names(&x86) != names(&arm) {
        return Err("decoders on aarch64: the sides answered for different files".into());
    }
    let differing: Vec<&str> = ours.iter().zip(&arm).filter(|(o, a)| o.1 != a.1).map(|(o, _)| o.0.as_str()).collect();
    let platforms_differ: Vec<&Answer> = x86.iter().zip(&arm).filter(|(x, a)| x.1 != a.1).map(|(_, a)| a).collect();
    check_recorded_aarch64_answers(&platforms_differ, &files)?;
    let platforms_differ = platforms_differ.len();
    let read = arm.iter().filter(|(_, answer)| answer.is_some()).count();
    println!(
        "emulate: decoders with C arithmetic (OpenJPEG, Little CMS) on aarch64 under qemu-aarch64: {} of {} files \
         as the aarch64 Pillow gives them ({read} read, {} refused); the aarch64 and x86-64 Pillows differ on {platforms_differ}; \
         aarch64 Pillow {reference_seconds:.1} s, this step {:.1} s",
        arm.len() - differing.len(),
        arm.len(),
        arm.len() - read,
        started.elapsed().as_secs_f64()
    );
    if differing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "decoders on aarch64: {} files differ from the aarch64 Pillow: {}",
            differing.len(),
            differing.join(", ")
        ))
    }
}

/// Checks that the files where the platforms' Pillows differ are JPEG 2000 cases whose aarch64
/// answers `tests/fixtures/jpeg2000/aarch64.json` records, by case index (`decoder_bits.py`
/// names them `jpeg2000_<index>_<base>`); writes the answers found to
/// `<files>-jpeg2000-aarch64.json`.
fn check_recorded_aarch64_answers(differing: &[&Answer], files: &Path) -> Result<()> {
    let mut found = serde_json::Map::new();
    for (name, answer) in differing {
        let index = name
            .strip_prefix("jpeg2000_")
            .and_then(|rest| rest.split('_').next())
            .and_then(|i| i.parse::<usize>().ok())
            .ok_or_else(|| format!("decoders on aarch64: {name} differs between the platforms' Pillows"))?;
        let value = match answer {
            Some((w, h, digest)) => serde_json::json!({ "width": w, "height": h, "fnv1a64": digest }),
            None => serde_json::json!({ "error": "refused" }),
        };
        found.insert(index.to_string(), value);
    }
    let found = serde_json::json!({ "cases": found });
    let written = files.with_extension("jpeg2000-aarch64.json");
    let text = serde_json::to_string_pretty(&found).map_err(|e| e.to_string())? + "\n";
    std::fs::write(&written, &text).map_err(|e| format!("{}: {e}", written.display()))?;
    let path = root().join("crates/preprocess/tests/fixtures/jpeg2000/aarch64.json");
    let recorded: serde_json::Value = std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if recorded["cases"] == found["cases"] {
        Ok(())
    } else {
        Err(format!(
            "decoders on aarch64: the cases where the platforms' Pillows differ are not the ones {} records; \
             what this run found is in {}",
            path.display(),
            written.display()
        ))
    }
}

/// The answers of one side: `decode_digests`'s or `decoder_bits.py answers`'s JSON lines.
fn answers(lines: &str) -> Result<Vec<Answer>> {
    lines
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("{line}: {e}"))?;
            let name = v["file"].as_str().ok_or_else(|| format!("{line}: no file"))?.to_owned();
            if v.get("error").is_some() {
                return Ok((name, None));
            }
            match (v["width"].as_u64(), v["height"].as_u64(), v["fnv1a64"].as_str()) {
                (Some(w), Some(h), Some(digest)) => Ok((name, Some((w, h, digest.to_owned())))),
                _ => Err(format!("{line}: neither an error nor a size and digest")),
            }
        })
        .collect()
}

//! The `gemma-vision` binary on the checked-in tiny checkpoints: `encode` and `preprocess`
//! write what the library computes; every failure exits with status 2, prints exactly one line
//! `error: …` on stderr, and leaves neither the output file nor a temporary file behind.

mod common;

use common::{bytes, fixture, image, load, temp_dir};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tensor::{Array, Dtype};

fn gemma_vision(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gemma-vision")).args(args).output().unwrap()
}

fn model(case: &str) -> String {
    fixture(case).join("model").display().to_string()
}

fn image_arg(case: &str, name: &str) -> String {
    image(case, name).display().to_string()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

fn loaded(path: &Path) -> BTreeMap<String, Array> {
    tensor::load_safetensors(path).unwrap()
}

/// Runs a failing command: status 2, one `error: ` line on stderr (returned), nothing on
/// stdout, and the output directory `dir` unchanged.
fn fails(args: &[&str], dir: &Path) -> String {
    let before = entries(dir);
    let out = gemma_vision(args);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: exactly one line on stderr, got {stderr:?}");
    assert!(lines[0].starts_with("error: "), "{args:?}: {stderr:?}");
    assert!(out.stdout.is_empty(), "{args:?}: {:?}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(entries(dir), before, "{args:?}: the output directory changed");
    lines[0].to_owned()
}

#[test]
fn encode_writes_the_features_and_soft_tokens_the_library_computes() {
    let dir = temp_dir("cli-encode");
    for (case, budget) in [("tiny-clipped", "6"), ("tiny-unified", "20")] {
        let out = dir.join(format!("{case}.safetensors"));
        let images = [image_arg(case, "gradient-37x23.png"), image_arg(case, "checker-20x30.png")];
        let run = gemma_vision(&[
            "encode",
            "--model",
            &model(case),
            "--image",
            &images[0],
            "--image",
            &images[1],
            "--max-soft-tokens",
            budget,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(run.status.success(), "{case}: {}", String::from_utf8_lossy(&run.stderr));
        assert!(run.stderr.is_empty(), "{case}: {}", String::from_utf8_lossy(&run.stderr));
        let written = loaded(&out);
        assert_eq!(written.keys().collect::<Vec<_>>(), ["features", "soft_tokens"], "{case}");
        let expected = load(&fixture(case).join("model")).encode_files(&images, Some(budget.parse().unwrap())).unwrap();
        let counts: Vec<i32> = expected.soft_tokens.iter().map(|&n| n as i32).collect();
        assert_eq!(written["soft_tokens"].dtype(), Dtype::I32);
        assert_eq!(written["soft_tokens"].to_vec::<i32>().unwrap(), counts, "{case}");
        assert_eq!(written["features"].dtype(), expected.features.dtype(), "{case}");
        assert_eq!(written["features"].shape(), expected.features.shape(), "{case}");
        assert_eq!(bytes(&written["features"]), bytes(&expected.features), "{case}: bit-identical");
    }
    // Only the two outputs: no temporary file left next to them.
    assert_eq!(entries(&dir), ["tiny-clipped.safetensors", "tiny-unified.safetensors"]);
}

#[test]
fn encode_frames_writes_one_videos_features() {
    let dir = temp_dir("cli-frames");
    for case in ["tiny-clipped", "tiny-unified"] {
        let out = dir.join(format!("{case}.safetensors"));
        let frames: Vec<String> =
            ["gradient-37x23.png", "checker-37x23.png", "noise-37x23.png"].iter().map(|f| image_arg(case, f)).collect();
        let m = model(case);
        let mut args = vec!["encode", "--model", &m, "--frames"];
        args.extend(frames.iter().map(String::as_str));
        let run = gemma_vision(&[&args[..], &["--out", out.to_str().unwrap()]].concat());
        assert!(run.status.success(), "{case}: {}", String::from_utf8_lossy(&run.stderr));
        let written = loaded(&out);
        let encoder = load(&fixture(case).join("model"));
        let video = encoder.video_preprocessor(None).unwrap();
        let decoded: Vec<_> = frames.iter().map(|f| preprocess::open(f, &encoder.options().limits).unwrap()).collect();
        let expected = encoder.encode(&encoder.prepare_video(&decoded, &video).unwrap()).unwrap();
        // The fixtures' video processor keeps 2 of the 3 frames.
        let counts: Vec<i32> = expected.soft_tokens.iter().map(|&n| n as i32).collect();
        assert_eq!(counts.len(), 2, "{case}");
        assert_eq!(written["soft_tokens"].to_vec::<i32>().unwrap(), counts, "{case}");
        assert_eq!(bytes(&written["features"]), bytes(&expected.features), "{case}: bit-identical");
    }
}

#[test]
fn encode_options_reach_the_encoder() {
    let dir = temp_dir("cli-options");
    let out = dir.join("f32.safetensors");
    let picture = image_arg("tiny-clipped", "noise-20x30.png");
    let args = ["encode", "--model", &model("tiny-clipped"), "--image", &picture, "--dtype", "f32"];
    let run = gemma_vision(&[&args[..], &["--divide-by-embed-scale", "--out", out.to_str().unwrap()]].concat());
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let features = &loaded(&out)["features"];
    assert_eq!(features.dtype(), Dtype::F32, "--dtype f32");
    let options = vision::EncoderOptions {
        compute_dtype: vision::ComputeDtype::F32,
        divide_by_embed_scale: true,
        ..Default::default()
    };
    let encoder = vision::VisionEncoder::load(fixture("tiny-clipped").join("model"), options).unwrap();
    // No --max-soft-tokens: the checkpoint's processor_config.json budget (6).
    let expected = encoder.encode_files(&[picture], None).unwrap();
    assert_eq!(bytes(features), bytes(&expected.features));
}

#[test]
fn preprocess_writes_what_the_encoder_consumes() {
    let dir = temp_dir("cli-preprocess");
    for case in ["tiny-clipped", "tiny-unified"] {
        let out = dir.join(format!("{case}.safetensors"));
        let picture = image_arg(case, "gradient-37x23.png");
        let run =
            gemma_vision(&["preprocess", "--model", &model(case), "--image", &picture, "--out", out.to_str().unwrap()]);
        assert!(run.status.success(), "{case}: {}", String::from_utf8_lossy(&run.stderr));
        let written = loaded(&out);
        let encoder = load(&fixture(case).join("model"));
        let preprocessor = encoder.preprocessor(None).unwrap();
        let decoded = preprocess::open(&picture, &Default::default()).unwrap();
        let resized = preprocessor.resize(&decoded).unwrap();
        let pixels = &written["pixels"];
        assert_eq!(pixels.dtype(), Dtype::U8);
        assert_eq!(pixels.shape(), [resized.height() as i32, resized.width() as i32, 3], "{case}");
        assert_eq!(pixels.to_vec::<u8>().unwrap(), resized.data(), "{case}");
        match encoder.prepare(&decoded, &preprocessor).unwrap() {
            vision::PreparedImage::Pixels(p) => {
                assert_eq!(written.keys().collect::<Vec<_>>(), ["pixel_values", "pixels"]);
                assert_eq!(written["pixel_values"].shape(), [3, p.height as i32, p.width as i32]);
                assert_eq!(written["pixel_values"].to_vec::<f32>().unwrap(), p.data);
            }
            vision::PreparedImage::Patches(p) => {
                assert_eq!(written.keys().collect::<Vec<_>>(), ["patches", "pixel_values", "pixels", "positions"]);
                assert_eq!(written["pixel_values"].shape(), [p.len as i32, p.dim as i32]);
                assert_eq!(written["pixel_values"].to_vec::<f32>().unwrap(), p.data);
                assert_eq!(written["patches"].shape(), [p.real as i32, p.dim as i32]);
                assert_eq!(written["positions"].dtype(), Dtype::I64);
                assert_eq!(written["positions"].to_vec::<i64>().unwrap(), p.positions);
            }
        }
    }
    assert_eq!(entries(&dir), ["tiny-clipped.safetensors", "tiny-unified.safetensors"]);
}

#[test]
fn bad_command_lines_fail_with_one_error_line() {
    let dir = temp_dir("cli-flags");
    let out = dir.join("out.safetensors");
    let out = out.to_str().unwrap();
    let (m, i) = (model("tiny-clipped"), image_arg("tiny-clipped", "noise-20x30.png"));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![], "expected a command: encode, embed, preprocess or inspect"),
        (vec!["frobnicate", "--model", &m], "unrecognized subcommand 'frobnicate'"),
        (
            vec!["encode", "--model", &m, "--image", &i, "--frobnicate", "--out", out],
            "unexpected argument '--frobnicate'",
        ),
        (vec!["encode", "--model", &m, "--image", &i, "--out"], "a value is required for '--out"),
        (vec!["encode", "--model", &m, "--image", &i], "required arguments were not provided: --out"),
        (vec!["encode", "--image", &i, "--out", out], "required arguments were not provided: --model"),
        (vec!["encode", "--model", &m, "--out", out], "required arguments were not provided: <--image <FILE>|--frames"),
        (vec!["encode", "--model", &m, "--image", &i, "--frames", &i, "--out", out], "cannot be used with"),
        (
            vec!["encode", "--model", &m, "--frames", &i, "--max-soft-tokens", "6", "--out", out],
            "a video's budget of 6 soft tokens per frame: it must be one of [70, 140, 280, 560, 1120]",
        ),
        (
            vec!["encode", "--model", &m, "--image", &i, "--max-soft-tokens", "many", "--out", out],
            "`many` is not a positive integer",
        ),
        (
            vec!["encode", "--model", &m, "--image", &i, "--max-soft-tokens", "-3", "--out", out],
            "a budget of -3 soft tokens: it must be at least 1",
        ),
        (
            vec!["encode", "--model", &m, "--image", &i, "--max-soft-tokens", "0", "--out", out],
            "invalid value '0' for '--max-soft-tokens <N>': a budget of 0 soft tokens: it must be at least 1",
        ),
        (
            vec!["encode", "--model", &m, "--image", &i, "--dtype", "f64", "--out", out],
            "invalid value 'f64' for '--dtype <native|f32>': dtype must be \"native\" or \"f32\", got \"f64\"",
        ),
        (
            vec!["preprocess", "--model", &m, "--image", &i, "--image", &i, "--out", out],
            "cannot be used multiple times",
        ),
    ];
    for (args, expected) in cases {
        let line = fails(&args, &dir);
        assert!(line.contains(expected), "{args:?}: {line}");
    }
}

#[test]
fn a_bad_model_fails_with_one_error_line_naming_it() {
    let dir = temp_dir("cli-model");
    let out = dir.join("out.safetensors");
    let i = image_arg("tiny-clipped", "noise-20x30.png");
    let missing = dir.join("no-such-model");
    let empty = temp_dir("cli-model-empty");
    let bad_config = temp_dir("cli-model-bad-config");
    fs::write(bad_config.join("config.json"), "{ not json").unwrap();
    for command in ["encode", "preprocess"] {
        for (model, expected) in [
            (missing.as_path(), format!("{}: not a directory", missing.display())),
            (&*empty, format!("{}: missing", empty.join("config.json").display())),
            (&*bad_config, format!("{}: `(document)`: invalid JSON", bad_config.join("config.json").display())),
        ] {
            let args = [command, "--model", model.to_str().unwrap(), "--image", &i, "--out", out.to_str().unwrap()];
            let line = fails(&args, &dir);
            assert!(line.starts_with(&format!("error: {expected}")), "{line}");
        }
    }
}

#[test]
fn a_bad_image_fails_with_one_error_line_naming_it() {
    let dir = temp_dir("cli-image");
    let inputs = temp_dir("cli-image-inputs");
    let out = dir.join("out.safetensors");
    let garbage = inputs.join("garbage.png");
    fs::write(&garbage, b"\x89PNG\r\n\x1a\nthis is not really a png").unwrap();
    let text = inputs.join("notes.jpg");
    fs::write(&text, "just words\n").unwrap();
    let empty = inputs.join("empty.png");
    fs::write(&empty, b"").unwrap();
    let missing = inputs.join("absent.png");
    let good = image_arg("tiny-clipped", "noise-20x30.png");
    let cases: Vec<(&Path, &str)> = vec![
        (&garbage, "malformed PNG data"),
        (&text, "unrecognised image format"),
        (&empty, "empty input"),
        (&missing, "No such file or directory"),
        (&inputs, "Is a directory"),
    ];
    let m = model("tiny-clipped");
    for (bad, expected) in cases {
        let bad_arg = bad.to_str().unwrap();
        for args in [
            vec!["encode", "--model", &m, "--image", &good, "--image", bad_arg, "--out", out.to_str().unwrap()],
            vec!["preprocess", "--model", &m, "--image", bad_arg, "--out", out.to_str().unwrap()],
        ] {
            let line = fails(&args, &dir);
            assert!(line.starts_with(&format!("error: {}: ", bad.display())), "{line}");
            assert!(line.contains(expected), "{line}");
        }
    }
    // A budget the encoder cannot attend over is refused the same way.
    let args =
        ["encode", "--model", &m, "--image", &good, "--max-soft-tokens", "1000000", "--out", out.to_str().unwrap()];
    let line = fails(&args, &dir);
    assert!(
        line.starts_with(
            "error: attention over an image at a budget of 1000000 soft tokens (up to 9000000 patches) needs about"
        ),
        "{line}"
    );
}

#[test]
fn an_unwritable_output_fails_with_one_error_line_and_leaves_nothing() {
    let dir = temp_dir("cli-output");
    let not_a_dir = dir.join("plain-file");
    fs::write(&not_a_dir, b"x").unwrap();
    let occupied = dir.join("occupied.safetensors");
    fs::create_dir(&occupied).unwrap();
    let outs: Vec<PathBuf> =
        vec![dir.join("missing-dir/out.safetensors"), not_a_dir.join("out.safetensors"), occupied.clone()];
    let (m, i) = (model("tiny-clipped"), image_arg("tiny-clipped", "noise-20x30.png"));
    for out in &outs {
        for command in ["encode", "preprocess"] {
            let line = fails(&[command, "--model", &m, "--image", &i, "--out", out.to_str().unwrap()], &dir);
            assert!(line.starts_with(&format!("error: {}: ", out.display())), "{line}");
        }
    }
    assert!(entries(&occupied).is_empty(), "nothing was written into the directory named by --out");
    assert_eq!(entries(&dir), ["occupied.safetensors", "plain-file"]);
}

/// `gemma-vision args` under a file-size limit of 512 bytes (`ulimit -f 1`), so that writing
/// the output fails part-way: with `SIGXFSZ` ignored the write returns an error (`EFBIG`); with
/// its default action the process is killed in the middle of the write.
fn gemma_vision_with_small_file_limit(args: &[&str], ignore_signal: bool) -> Output {
    let trap = if ignore_signal { "trap '' XFSZ; " } else { "" };
    Command::new("sh")
        .arg("-c")
        .arg(format!("{trap}ulimit -f 1 && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_gemma-vision"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_write_that_fails_part_way_leaves_the_previous_output_and_no_temporary_file() {
    let dir = temp_dir("cli-write-fails");
    let (m, i) = (model("tiny-clipped"), image_arg("tiny-clipped", "noise-20x30.png"));
    let previous = b"the previous output".as_slice();
    for command in ["encode", "preprocess"] {
        let out = dir.join(format!("{command}.safetensors"));
        fs::write(&out, previous).unwrap();
        let before = entries(&dir);
        let run = gemma_vision_with_small_file_limit(
            &[command, "--model", &m, "--image", &i, "--out", out.to_str().unwrap()],
            true,
        );
        let stderr = String::from_utf8(run.stderr).unwrap();
        assert_eq!(run.status.code(), Some(2), "{command}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{command}: {stderr:?}");
        assert!(stderr.starts_with(&format!("error: {}: File too large", out.display())), "{command}: {stderr:?}");
        assert_eq!(fs::read(&out).unwrap(), previous, "{command}: the previous output is untouched");
        assert_eq!(entries(&dir), before, "{command}: no temporary file is left");
    }
}

#[test]
fn a_write_interrupted_by_a_signal_never_leaves_a_partial_output() {
    use std::os::unix::process::ExitStatusExt;
    let dir = temp_dir("cli-write-killed");
    let (m, i) = (model("tiny-clipped"), image_arg("tiny-clipped", "noise-20x30.png"));
    let previous = dir.join("previous.safetensors");
    fs::write(&previous, b"the previous output").unwrap();
    let fresh = dir.join("fresh.safetensors");
    for out in [&previous, &fresh] {
        let run = gemma_vision_with_small_file_limit(
            &["encode", "--model", &m, "--image", &i, "--out", out.to_str().unwrap()],
            false,
        );
        assert_eq!(run.status.signal(), Some(25), "killed by SIGXFSZ while writing: {run:?}");
    }
    // The output is as it was (the old bytes, or no file): the process died writing its
    // temporary file. A killed process cannot remove that hidden temporary file itself.
    assert_eq!(fs::read(&previous).unwrap(), b"the previous output");
    assert!(!fresh.exists());
    for name in entries(&dir) {
        assert!(name == "previous.safetensors" || (name.starts_with('.') && name.ends_with(".partial")), "{name}");
    }
}

#[test]
fn help_and_version_go_to_stdout_and_succeed() {
    for (args, expected) in [
        (vec!["--help"], "Usage: gemma-vision <COMMAND>"),
        (vec!["encode", "--help"], "--max-soft-tokens <N>"),
        (vec!["preprocess", "--help"], "--image <FILE>"),
        (vec!["--version"], concat!("gemma-vision ", env!("CARGO_PKG_VERSION"))),
    ] {
        let run = gemma_vision(&args);
        let stdout = String::from_utf8(run.stdout).unwrap();
        assert!(run.status.success(), "{args:?}: {}", String::from_utf8_lossy(&run.stderr));
        assert!(stdout.contains(expected), "{args:?}: {stdout}");
        assert!(run.stderr.is_empty(), "{args:?}");
    }
}

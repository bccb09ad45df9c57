//! `gemma-vision embed` on the checked-in tiny checkpoints: each image's rows are what the
//! library computes for it alone, whatever the batch and shard sizes; a run killed with SIGKILL
//! and rerun ends with exactly what an uninterrupted run writes; unreadable images land in the
//! errors file and nothing else is lost; fatal errors keep the one-line, exit-2 contract.

mod common;

use common::{bytes, fixture, image, load, temp_dir};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use vision::CacheIdentity;

fn gemma_vision(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gemma-vision")).args(args).output().unwrap()
}

fn model(case: &str) -> String {
    fixture(case).join("model").display().to_string()
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Runs `embed` and expects success: nothing on stderr, the summary on stdout (returned).
fn embed(args: &[&str]) -> String {
    let out = gemma_vision(&[&["embed"], args].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    assert!(stderr.is_empty(), "{args:?}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// One image of an output directory: its metadata row, its features' bytes and the shard's
/// identity, dtype and budget.
#[derive(Debug, PartialEq)]
struct Stored {
    row: Value,
    features: Vec<u8>,
    dtype: String,
    identity: String,
    budget: String,
}

/// Every image and every error of an output directory's shards, by path; each path once.
fn read_output(dir: &Path) -> (BTreeMap<String, Stored>, BTreeMap<String, String>) {
    let mut images = BTreeMap::new();
    let mut errors = BTreeMap::new();
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    for name in names.iter().filter(|n| n.starts_with("shard-")) {
        let data = fs::read(dir.join(name)).unwrap();
        let (_, header) = safetensors::SafeTensors::read_metadata(&data).unwrap();
        let metadata = header.metadata().clone().unwrap();
        let rows: Vec<Value> = serde_json::from_str(&metadata["images"]).unwrap();
        let failed: Vec<Value> = serde_json::from_str(&metadata["errors"]).unwrap();
        for error in failed {
            let path = error["path"].as_str().unwrap().to_owned();
            assert!(errors.insert(path, error["error"].as_str().unwrap().to_owned()).is_none());
        }
        if rows.is_empty() {
            continue;
        }
        let file = safetensors::SafeTensors::deserialize(&data).unwrap();
        let features = file.tensor("features").unwrap();
        let counts: Vec<i32> = file
            .tensor("soft_tokens")
            .unwrap()
            .data()
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let row_bytes = features.data().len() / features.shape()[0];
        let mut start = 0;
        for (row, count) in rows.into_iter().zip(counts) {
            assert_eq!(row["soft_tokens"].as_i64(), Some(i64::from(count)));
            let end = start + count as usize * row_bytes;
            let path = row["path"].as_str().unwrap().to_owned();
            let stored = Stored {
                row,
                features: features.data()[start..end].to_vec(),
                dtype: format!("{:?}", features.dtype()),
                identity: metadata["model_identity"].clone(),
                budget: metadata["max_soft_tokens"].clone(),
            };
            assert!(images.insert(path.clone(), stored).is_none(), "{path} written twice");
            start = end;
        }
        assert_eq!(start, features.data().len());
    }
    (images, errors)
}

/// `count` copies of the tiny fixture images (three sizes) under distinct names.
fn corpus(dir: &Path, count: usize) -> Vec<PathBuf> {
    fs::create_dir_all(dir).unwrap();
    let sources = ["gradient-37x23.png", "checker-20x30.png", "noise-20x30.png"];
    (0..count)
        .map(|i| {
            let path = dir.join(format!("img-{i:04}.png"));
            fs::copy(image("tiny-clipped", sources[i % 3]), &path).unwrap();
            path
        })
        .collect()
}

#[test]
fn each_image_gets_the_rows_the_library_computes_for_it_alone_whatever_the_batching() {
    for (case, budget) in [("tiny-clipped", "6"), ("tiny-unified", "20")] {
        let images = fixture(case).join("images");
        let encoder = load(&fixture(case).join("model"));
        let mut outputs = Vec::new();
        for (batch, shard_size) in [("1", "1"), ("4", "2"), ("8", "256")] {
            let out = temp_dir(&format!("embed-{case}-{batch}"));
            let summary = embed(&[
                "--model",
                &model(case),
                "--images",
                text(&images),
                "--out",
                text(&out),
                "--max-soft-tokens",
                budget,
                "--batch",
                batch,
                "--shard-size",
                shard_size,
            ]);
            let (stored, errors) = read_output(&out);
            assert!(errors.is_empty(), "{errors:?}");
            let files = fs::read_dir(&images).unwrap().count();
            assert_eq!(stored.len(), files, "{case}");
            assert!(summary.starts_with(&format!("embedded {files} image(s)")), "{summary}");
            for (path, image) in &stored {
                let alone = encoder.encode_files(&[path], Some(budget.parse().unwrap())).unwrap();
                assert_eq!(image.features, bytes(&alone.features), "{case} {path}");
                assert_eq!(image.row["soft_tokens"].as_u64(), Some(alone.soft_tokens[0] as u64));
                assert_eq!(image.row["budget"].to_string(), budget);
                assert_eq!(image.budget, budget);
                assert_eq!(image.identity, encoder.cache_identity().unwrap());
                let decoded = preprocess::open(path, &Default::default()).unwrap();
                assert_eq!(image.row["height"].as_u64(), Some(u64::from(decoded.height())));
                assert_eq!(image.row["width"].as_u64(), Some(u64::from(decoded.width())));
            }
            assert_eq!(fs::read_to_string(out.join("errors.jsonl")).unwrap(), "");
            outputs.push(stored);
        }
        assert!(outputs.windows(2).all(|w| w[0] == w[1]), "{case}: batch and shard sizes changed the output");
    }
}

#[test]
fn a_run_killed_with_sigkill_and_rerun_ends_with_what_an_uninterrupted_run_writes() {
    let dir = temp_dir("embed-kill");
    let images = dir.join("images");
    let paths = corpus(&images, 600);
    let args = |out: &Path| -> Vec<String> {
        ["--model", &model("tiny-clipped"), "--images", text(&images), "--out", text(out)]
            .into_iter()
            .map(str::to_owned)
            .chain(["--max-soft-tokens", "6", "--batch", "2", "--shard-size", "7"].map(str::to_owned))
            .collect()
    };
    let whole = dir.join("whole");
    embed(&args(&whole).iter().map(String::as_str).collect::<Vec<_>>());
    let (expected, _) = read_output(&whole);
    assert_eq!(expected.len(), paths.len());

    let resumed = dir.join("resumed");
    let mut child = Command::new(env!("CARGO_BIN_EXE_gemma-vision"))
        .arg("embed")
        .args(args(&resumed))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let first_shard = resumed.join("shard-000000.safetensors");
    while !first_shard.exists() {
        assert!(child.try_wait().unwrap().is_none(), "embed ended before its first shard");
        assert!(started.elapsed() < Duration::from_secs(120), "no shard after two minutes");
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let (partial, _) = read_output(&resumed);
    assert!(!partial.is_empty() && partial.len() < paths.len(), "killed mid-run: {} of {}", partial.len(), paths.len());

    let summary = embed(&args(&resumed).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(summary.contains(&format!("skipped {} image(s)", partial.len())), "{summary}");
    let (after, errors) = read_output(&resumed);
    assert!(errors.is_empty());
    assert_eq!(after, expected, "the resumed output differs from the uninterrupted one");
    let leftovers: Vec<_> = fs::read_dir(&resumed)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // A third run finds everything done.
    let summary = embed(&args(&resumed).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(summary.starts_with("embedded 0 image(s)"), "{summary}");
}

#[test]
fn unreadable_images_land_in_the_errors_file_and_nothing_else_is_lost() {
    let dir = temp_dir("embed-errors");
    let images = dir.join("images");
    let good = corpus(&images, 5);
    let text_file = images.join("notes.png");
    fs::write(&text_file, "not an image").unwrap();
    let truncated = images.join("truncated.png");
    let png = fs::read(image("tiny-clipped", "noise-20x30.png")).unwrap();
    fs::write(&truncated, &png[..png.len() / 2]).unwrap();
    let empty = images.join("empty.jpg");
    fs::write(&empty, "").unwrap();
    let out = dir.join("out");
    let args =
        ["--model", &model("tiny-clipped"), "--images", text(&images), "--out", text(&out), "--max-soft-tokens", "6"];
    let summary = embed(&args);
    assert!(summary.contains("3 image(s) could not be read in this run, 3 in all"), "{summary}");

    let (stored, errors) = read_output(&out);
    assert_eq!(stored.keys().map(PathBuf::from).collect::<Vec<_>>(), good);
    let bad = [&empty, &text_file, &truncated];
    assert_eq!(errors.keys().map(PathBuf::from).collect::<Vec<_>>(), bad.map(|p| p.to_path_buf()));
    for path in bad {
        // The message `gemma-vision encode` prints for the same file.
        let encode = gemma_vision(&[
            "encode",
            "--model",
            &model("tiny-clipped"),
            "--image",
            text(path),
            "--out",
            text(&dir.join("x.safetensors")),
        ]);
        let stderr = String::from_utf8(encode.stderr).unwrap();
        assert_eq!(format!("error: {}\n", errors[text(path)]), stderr);
    }
    let lines: Vec<Value> = fs::read_to_string(out.join("errors.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert!(lines.iter().all(|l| errors[l["path"].as_str().unwrap()] == l["error"].as_str().unwrap()));

    // A rerun skips the failures too and keeps them in the errors file.
    let summary = embed(&args);
    assert!(summary.starts_with("embedded 0 image(s)") && summary.contains("skipped 8 image(s)"), "{summary}");
    assert!(summary.contains("0 image(s) could not be read in this run, 3 in all"), "{summary}");
    assert_eq!(fs::read_to_string(out.join("errors.jsonl")).unwrap().lines().count(), 3);
}

#[test]
fn globs_and_lists_name_the_images_and_record_their_paths_as_given() {
    let dir = temp_dir("embed-sources");
    let images = dir.join("images");
    corpus(&images, 4);
    fs::write(dir.join("list.txt"), "# two of them\nimages/img-0003.png\nimages/img-0001.png\n").unwrap();
    let list_out = dir.join("list-out");
    embed(&["--model", &model("tiny-clipped"), "--images", text(&dir.join("list.txt")), "--out", text(&list_out)]);
    let (listed, _) = read_output(&list_out);
    let expected = [images.join("img-0001.png"), images.join("img-0003.png")];
    assert_eq!(listed.keys().map(PathBuf::from).collect::<Vec<_>>(), expected);

    let glob_out = dir.join("glob-out");
    let pattern = images.join("img-000[12].png");
    embed(&["--model", &model("tiny-clipped"), "--images", text(&pattern), "--out", text(&glob_out)]);
    let (globbed, _) = read_output(&glob_out);
    assert_eq!(
        globbed.keys().map(PathBuf::from).collect::<Vec<_>>(),
        [1, 2].map(|i| images.join(format!("img-000{i}.png")))
    );
    assert_eq!(globbed[text(&images.join("img-0001.png"))], listed[text(&images.join("img-0001.png"))]);
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Runs a failing command: status 2, one `error: ` line on stderr (returned), nothing on stdout.
fn fails(args: &[&str]) -> String {
    let out = gemma_vision(&[&["embed"], args].concat());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: {stderr:?}");
    assert!(lines[0].starts_with("error: "), "{args:?}: {stderr:?}");
    assert!(out.stdout.is_empty(), "{args:?}: {:?}", String::from_utf8_lossy(&out.stdout));
    lines[0].to_owned()
}

#[test]
fn fatal_errors_exit_2_with_one_line() {
    let dir = temp_dir("embed-fatal");
    let images = dir.join("images");
    corpus(&images, 2);
    let out = dir.join("out");
    let with = |extra: &[&str]| -> Vec<String> {
        ["--model", &model("tiny-clipped"), "--images", text(&images), "--out", text(&out)]
            .iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect()
    };

    let missing_model = fails(&["--model", text(&dir.join("none")), "--images", text(&images), "--out", text(&out)]);
    assert!(missing_model.contains("not a directory"), "{missing_model}");
    assert!(!out.exists(), "a failed start leaves no output directory behind");
    let empty = dir.join("empty");
    fs::create_dir_all(&empty).unwrap();
    let no_images = fails(&["--model", &model("tiny-clipped"), "--images", text(&empty), "--out", text(&out)]);
    assert_eq!(no_images, format!("error: {}: no images", empty.display()));
    assert!(fails(&strs(&with(&["--batch", "0"]))).contains("must be positive"));
    let nowhere = dir.join("nowhere/*.png");
    let no_match = fails(&["--model", &model("tiny-clipped"), "--images", text(&nowhere), "--out", text(&out)]);
    assert_eq!(no_match, format!("error: {}: no images", nowhere.display()));

    embed(&strs(&with(&["--max-soft-tokens", "6"])));
    let other_encoder = fails(&strs(&with(&["--max-soft-tokens", "6", "--dtype", "f32"])));
    assert!(other_encoder.contains("holds features of another encoder"), "{other_encoder}");
    let other_budget = fails(&strs(&with(&["--max-soft-tokens", "8"])));
    assert!(other_budget.contains("was written with a budget of 6 soft tokens, this job's is 8"), "{other_budget}");
}

/// Pillow 13.0.0's test images (every format, broken and hostile files), which `cargo xtask
/// setup` fetches; `cargo xtask test` runs setup first, so a missing directory is an error.
fn pillow_images() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.deps/corpus/pillow-13.0.0/Tests/images");
    assert!(dir.is_dir(), "{} is missing: run `cargo xtask setup` (it fetches Pillow's test images)", dir.display());
    dir
}

/// Every file below `dir`, sorted.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_below(&path));
        } else if path.is_file() {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// Runs `embed` and expects it to finish (exit 0, the summary on stdout, returned). Stderr may
/// hold the default panic hook's lines of panics caught on the way.
fn embed_finishes(args: &[&str]) -> String {
    let out = gemma_vision(&[&["embed"], args].concat());
    assert!(out.status.success(), "{args:?}: {:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The rows of an output directory's errors file.
fn error_lines(out: &Path) -> Vec<Value> {
    fs::read_to_string(out.join("errors.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn every_file_of_pillows_corpus_the_decoders_refuse_is_recorded_and_the_job_finishes() {
    let pillow = pillow_images();
    let dir = temp_dir("embed-pillow-refused");
    let images = dir.join("images");
    let good = corpus(&images, 3);
    // Each file `preprocess` refuses, and the tiled planar TIFFs that once panicked inside the
    // `tiff` crate (ending a job with exit 101, no shard and no errors file), under flattened
    // names, with their extensions kept.
    let mut refused = Vec::new();
    let mut panicked_before = Vec::new();
    for path in files_below(&pillow) {
        let name = path.strip_prefix(&pillow).unwrap().to_string_lossy().replace('/', "__");
        let bytes = fs::read(&path).unwrap();
        let fails = preprocess::decode(&bytes, &Default::default()).is_err();
        let once_panicked = name.starts_with("tiff_tiled_planar_");
        if fails || once_panicked {
            let copy = images.join(format!("pillow-{name}"));
            fs::write(&copy, &bytes).unwrap();
            if fails {
                refused.push(copy);
            } else {
                panicked_before.push(copy);
            }
        }
    }
    assert!(refused.len() > 100, "only {} refused files in Pillow's corpus", refused.len());
    let listed = files_below(&images).len();
    assert_eq!(listed, good.len() + refused.len() + panicked_before.len());

    let out = dir.join("out");
    let args = ["--model", &model("tiny-clipped"), "--images", text(&images), "--out", text(&out), "--batch", "2"];
    let summary = embed_finishes(&args);
    let (stored, errors) = read_output(&out);
    let lines = error_lines(&out);
    let shards = fs::read_dir(&out)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_str().unwrap().starts_with("shard-"))
        .count();
    let mut kinds = BTreeMap::<&str, usize>::new();
    for line in &lines {
        *kinds.entry(line["kind"].as_str().unwrap()).or_default() += 1;
    }
    println!(
        "{listed} files ({} good, {} refused by the decoders, {} tiled planar TIFFs decoded): {} encoded, {} \
         recorded in errors.jsonl {kinds:?}, {shards} shard(s)\n{summary}",
        good.len(),
        refused.len(),
        panicked_before.len(),
        stored.len(),
        lines.len(),
    );
    for path in &good {
        assert!(stored.contains_key(text(path)), "{} not encoded: {:?}", path.display(), errors.get(text(path)));
    }
    for path in &refused {
        assert!(errors.contains_key(text(path)), "{} not in the errors", path.display());
    }
    // Whatever the decoders make of the TIFFs now, each is accounted for once.
    for path in &panicked_before {
        assert!(stored.contains_key(text(path)) != errors.contains_key(text(path)), "{}", path.display());
    }
    assert_eq!(stored.len() + errors.len(), listed, "every file is encoded or recorded once");
    assert_eq!(lines.len(), errors.len());
    for line in &lines {
        let path = line["path"].as_str().unwrap();
        assert_eq!(line["error"].as_str(), Some(errors[path].as_str()));
        let kind = line["kind"].as_str().unwrap();
        assert!(kind != "other" && kind != "timeout", "{path}: {kind}");
    }
    assert!(summary.contains(&format!("{} image(s) could not be read in this run", errors.len())), "{summary}");

    // A rerun retries none of them.
    let summary = embed_finishes(&args);
    assert!(
        summary.starts_with("embedded 0 image(s)") && summary.contains(&format!("skipped {listed} image(s)")),
        "{summary}"
    );
    assert_eq!(error_lines(&out), lines);
}

#[test]
fn a_file_slower_to_decode_than_the_bound_is_recorded_as_a_timeout_and_the_job_goes_on() {
    let dir = temp_dir("embed-timeout");
    let images = dir.join("images");
    let good = corpus(&images, 1);
    // Named pipes that no process ever writes: opening one blocks for good, so each read
    // outlasts any bound (as a file on a stalled network mount does), whatever the machine's load.
    let stalled: Vec<PathBuf> = (0..2).map(|i| images.join(format!("stalled-{i}.png"))).collect();
    for path in &stalled {
        let made = Command::new("mkfifo").arg(path).status().expect("mkfifo");
        assert!(made.success(), "mkfifo {}", path.display());
    }
    let list = dir.join("images.txt");
    let listed = [&stalled[0], &good[0], &stalled[1]];
    fs::write(&list, listed.map(|p| format!("images/{}\n", p.file_name().unwrap().to_str().unwrap())).concat())
        .unwrap();
    let out = dir.join("out");
    let args =
        ["--model", &model("tiny-clipped"), "--images", text(&list), "--out", text(&out), "--file-timeout", "0.5"];
    let started = Instant::now();
    let summary = embed_finishes(&args);
    assert!(started.elapsed() < Duration::from_secs(60), "the job waited on the stalled files");
    assert!(summary.starts_with("embedded 1 image(s)"), "{summary}");
    let lines = error_lines(&out);
    // The workers record failures as they happen, so the rows come in completion order.
    let mut recorded = lines.iter().map(|l| PathBuf::from(l["path"].as_str().unwrap())).collect::<Vec<_>>();
    recorded.sort();
    assert_eq!(recorded, stalled);
    for line in &lines {
        assert_eq!(line["kind"], "timeout");
        assert!(line["error"].as_str().unwrap().contains("took longer than the per-file bound"), "{line}");
    }
}

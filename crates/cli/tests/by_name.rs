//! `--model ORG/NAME[@REV]` through the `gemma-vision` command, against the Hub stand-in on
//! 127.0.0.1 (`HF_ENDPOINT`), with the caches in a temporary `HF_HOME`.

mod common;

use common::{fixture, image, temp_dir};
use hub::stand_in::{SeededCheckpoint, StandIn};
use std::path::Path;
use std::process::{Command, Output};

fn gemma_vision(args: &[&str], endpoint: &str, home: &Path, offline: bool) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gemma-vision"));
    command.args(args).env("HF_ENDPOINT", endpoint).env("HF_HOME", home);
    for variable in ["HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "GEMMA_VISION_CACHE", "HF_TOKEN", "HF_TOKEN_PATH"] {
        command.env_remove(variable);
    }
    if offline {
        command.env("HF_HUB_OFFLINE", "1");
    } else {
        command.env_remove("HF_HUB_OFFLINE");
    }
    command.output().unwrap()
}

#[test]
fn encode_and_inspect_take_a_hub_name() {
    let scratch = temp_dir("by-name");
    let checkpoint = SeededCheckpoint::from_model_dir(&fixture("tiny-clipped").join("model"), 2, 1 << 20, 5).unwrap();
    let stand_in = StandIn::start().unwrap();
    let commit = stand_in.host("org/tiny", "main", checkpoint.hosted());
    let endpoint = stand_in.endpoint().to_owned();
    let home = scratch.join("hf");
    let directory = scratch.join("directory");
    checkpoint.write_to(&directory).unwrap();
    let picture = image("tiny-clipped", "gradient-37x23.png").display().to_string();

    let by_dir = scratch.join("by-dir.safetensors");
    let by_name = scratch.join("by-name.safetensors");
    let dir_arg = directory.display().to_string();
    for (model, out, offline) in [(dir_arg.as_str(), &by_dir, false), ("org/tiny", &by_name, false)] {
        let run = gemma_vision(
            &["encode", "--model", model, "--image", &picture, "--out", &out.display().to_string()],
            &endpoint,
            &home,
            offline,
        );
        assert!(run.status.success(), "{model}: {}", String::from_utf8_lossy(&run.stderr));
    }
    assert_eq!(std::fs::read(&by_dir).unwrap(), std::fs::read(&by_name).unwrap(), "the same file, byte for byte");
    assert!(stand_in.served().total_content_bytes() * 4 < checkpoint.total_bytes());

    stand_in.reset_served();
    let pinned = format!("org/tiny@{commit}");
    let run = gemma_vision(&["inspect", "--model", &pinned], &endpoint, &home, true);
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let source = text.lines().find(|l| l.starts_with("source")).unwrap_or_default();
    assert!(source.contains(&pinned) && source.contains("fetched"), "{text}");
    assert!(stand_in.served().requests.is_empty(), "offline and pinned: no request");
}

#[test]
fn a_name_that_fails_is_one_error_line() {
    let scratch = temp_dir("by-name-fails");
    let stand_in = StandIn::start().unwrap();
    let home = scratch.join("hf");
    let out = scratch.join("x.safetensors").display().to_string();
    let picture = image("tiny-clipped", "gradient-37x23.png").display().to_string();
    for (offline, expected) in [(false, "HF_TOKEN"), (true, "HF_HUB_OFFLINE")] {
        let run = gemma_vision(
            &["encode", "--model", "org/missing", "--image", &picture, "--out", &out],
            stand_in.endpoint(),
            &home,
            offline,
        );
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains("org/missing@main") && stderr.contains(expected),
            "{stderr}"
        );
        assert!(!Path::new(&out).exists());
    }
}

#[test]
fn two_processes_loading_one_model_at_once_fetch_it_once() {
    let scratch = temp_dir("by-name-two-processes");
    let checkpoint = SeededCheckpoint::from_model_dir(&fixture("tiny-unified").join("model"), 3, 1 << 20, 9).unwrap();
    let stand_in = StandIn::start().unwrap();
    stand_in.host("org/tiny", "main", checkpoint.hosted());
    let home = scratch.join("hf");
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_gemma-vision"))
                .args(["inspect", "--model", "org/tiny"])
                .env("HF_ENDPOINT", stand_in.endpoint())
                .env("HF_HOME", &home)
                .env_remove("HF_HUB_CACHE")
                .env_remove("GEMMA_VISION_CACHE")
                .env_remove("HF_HUB_OFFLINE")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<Output> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    for output in &outputs {
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let sources: Vec<String> = outputs
        .iter()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout).lines().find(|l| l.starts_with("source")).unwrap_or_default().to_owned()
        })
        .collect();
    assert_eq!(sources[0], sources[1]);
    // One fetch's bytes: the second process waited on the commit's lock, then found it stored.
    let fetched: u64 =
        sources[0].split(", ").nth(1).and_then(|s| s.split(' ').next()).and_then(|n| n.parse().ok()).unwrap();
    assert_eq!(stand_in.served().total_content_bytes(), fetched, "{}", sources[0]);
}

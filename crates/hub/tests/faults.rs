//! A server that refuses, lies, drops the connection or ignores ranges: each a clean, typed
//! error or the whole-file fallback, resumed where possible, and nothing half-written where a
//! reader would take it as whole.

mod common;

use common::*;
use gemma_vision_hub::stand_in::Fault;
use gemma_vision_hub::{Error, ErrorKind, Missing, Origin, Token, resolve_hub};

fn first_shard(checkpoint: &gemma_vision_hub::stand_in::SeededCheckpoint) -> String {
    checkpoint.files.keys().find(|p| p.ends_with(".safetensors")).unwrap().clone()
}

/// Nothing under the store's snapshots, and no file of the commit in the Hugging Face cache.
fn nothing_complete(environment: &gemma_vision_hub::HubEnvironment) {
    let snapshots = environment.store.join("models--org--model/snapshots");
    assert!(std::fs::read_dir(&snapshots).map_or(true, |mut d| d.next().is_none()), "{}", snapshots.display());
    assert!(!environment.hf_cache.join("models--org--model/snapshots").exists());
}

#[test]
fn a_dropped_connection_is_resumed_within_the_load() {
    let World { scratch: _scratch, checkpoint, stand_in, commit: _, environment } = World::new("drop-once");
    let shard = first_shard(&checkpoint);
    // Its header's two answers (8 bytes, then under 10,000) pass whole; the next two answers,
    // for its 48 KiB of vision tensors, stop after 10,000 bytes.
    let header = u64::from_le_bytes(checkpoint.files[&shard][..8].try_into().unwrap());
    assert!(header < 10_000);
    stand_in.set_fault(&format!("org/model/{shard}"), Some(Fault::Drop { after: 10_000, times: 4 }));
    let resolved = resolve_hub(&model("org/model"), &selection(), &environment).unwrap();
    assert_eq!(tensors_in(&resolved.dir).len(), 6);
    assert_eq!(stand_in.served().total_content_bytes(), needed_bytes(&checkpoint, &selection()), "no byte twice");
}

#[test]
fn an_interrupted_load_fails_cleanly_and_the_next_one_resumes() {
    let World { scratch: _scratch, checkpoint, stand_in, commit: _, environment } = World::new("drop-always");
    let shard = first_shard(&checkpoint);
    let header = 8 + u64::from_le_bytes(checkpoint.files[&shard][..8].try_into().unwrap());
    // The two header requests pass whole; every data answer after them stops after 512 bytes.
    stand_in.set_fault(&format!("org/model/{shard}"), Some(Fault::Drop { after: 512, times: 1000 }));
    let error = resolve_hub(&model("org/model"), &selection(), &environment).unwrap_err();
    assert!(matches!(error, Error::Length { .. }), "{error}");
    assert!(error.to_string().contains("org/model@main"), "{error}");
    nothing_complete(&environment);
    let first_attempt = stand_in.served().total_content_bytes();

    stand_in.set_fault(&format!("org/model/{shard}"), None);
    let resolved = resolve_hub(&model("org/model"), &selection(), &environment).unwrap();
    assert_eq!(tensors_in(&resolved.dir).len(), 6);
    let total = stand_in.served().total_content_bytes();
    let needed = needed_bytes(&checkpoint, &selection());
    // The second attempt re-reads the small files and headers only; no tensor byte twice.
    let small: u64 = ["config.json", "processor_config.json", gemma_vision_hub::INDEX_FILE]
        .iter()
        .map(|f| checkpoint.files[*f].len() as u64)
        .sum();
    assert!(first_attempt > 512, "the first attempt got tensor bytes: {first_attempt}");
    assert!(total <= needed + small + 2 * header + 1024, "{total} for {needed} needed");
}

#[test]
fn refused_access_says_how_to_give_a_token_and_tokens_stay_on_the_hub() {
    let World { scratch: _scratch, checkpoint: _, stand_in, commit: _, mut environment } = World::new("token");
    stand_in.require_token("org/model", "hf_secret");
    let error = resolve_hub(&model("org/model"), &selection(), &environment).unwrap_err();
    assert!(matches!(error, Error::Unauthorized { status: 401, token_sent: false, .. }), "{error}");
    assert_eq!(error.kind(), ErrorKind::Unauthorized);
    let text = error.to_string();
    assert!(text.contains("org/model@main") && text.contains("HF_TOKEN") && text.contains("gated"), "{text}");
    environment.token = Token::new("hf_wrong");
    let error = resolve_hub(&model("org/model"), &selection(), &environment).unwrap_err();
    assert!(matches!(error, Error::Unauthorized { status: 403, token_sent: true, .. }), "{error}");
    assert!(!error.to_string().contains("hf_wrong"), "the token is never printed");
    nothing_complete(&environment);

    environment.token = Token::new("hf_secret");
    stand_in.reset_served();
    resolve_hub(&model("org/model"), &selection(), &environment).unwrap();
    let requests = stand_in.served().requests;
    assert!(requests.iter().any(|r| r.path.starts_with("/cdn/")), "weights come from the content store");
    for request in &requests {
        assert_eq!(request.authorized, !request.path.starts_with("/cdn/"), "{request:?}");
    }
}

#[test]
fn missing_repositories_revisions_and_files_are_not_found() {
    let World { scratch: _scratch, checkpoint, stand_in, commit: _, mut environment } = World::new("not-found");
    // Without a token the Hub answers 401 for a repository it does not show.
    let error = resolve_hub(&model("org/none"), &selection(), &environment).unwrap_err();
    assert!(matches!(error, Error::Unauthorized { status: 401, .. }), "{error}");
    assert!(error.to_string().contains("may not exist"), "{error}");
    environment.token = Token::new("hf_any");
    let error = resolve_hub(&model("org/none"), &selection(), &environment).unwrap_err();
    assert!(matches!(&error, Error::NotFound { missing: Missing::Repository, .. }), "{error}");
    let error = resolve_hub(&model("org/model@v9"), &selection(), &environment).unwrap_err();
    assert!(matches!(&error, Error::NotFound { missing: Missing::Revision, .. }), "{error}");
    assert!(error.to_string().contains("org/model@v9"), "{error}");

    let mut no_config = checkpoint.clone();
    no_config.files.remove("config.json");
    stand_in.host("org/noconfig", "main", no_config.hosted());
    let error = resolve_hub(&model("org/noconfig"), &selection(), &environment).unwrap_err();
    assert!(matches!(&error, Error::NotFound { missing: Missing::File(f), .. } if f == "config.json"), "{error}");
}

#[test]
fn truncated_and_lying_answers_are_errors_with_nothing_half_written() {
    for (file, fault) in [
        ("config.json", Fault::Drop { after: 5, times: 1000 }),
        ("config.json", Fault::LyingLength { delta: 50 }),
        ("config.json", Fault::LyingLength { delta: -5 }),
        ("SHARD", Fault::LyingLength { delta: 100 }),
        ("SHARD", Fault::LyingLength { delta: -3 }),
        ("SHARD", Fault::Status(500)),
    ] {
        let World { scratch: _scratch, checkpoint, stand_in, commit: _, environment } = World::new("lying");
        let file = if file == "SHARD" { first_shard(&checkpoint) } else { file.to_owned() };
        stand_in.set_fault(&format!("org/model/{file}"), Some(fault.clone()));
        let error = resolve_hub(&model("org/model"), &selection(), &environment).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::BadResponse, "{fault:?} on {file}: {error}");
        assert!(error.to_string().contains("org/model@main"), "{error}");
        nothing_complete(&environment);
        let partial = environment.store.join("models--org--model/partial");
        if let Ok(commits) = std::fs::read_dir(&partial) {
            for commit in commits {
                let dir = commit.unwrap().path();
                if let Ok(config) = std::fs::read(dir.join("config.json")) {
                    assert_eq!(config, checkpoint.files["config.json"], "a small file is whole or absent");
                }
            }
        }
    }
}

#[test]
fn a_server_that_ignores_ranges_gets_whole_files_in_the_hugging_face_layout() {
    let World { scratch, checkpoint, stand_in, commit, environment } = World::new("no-ranges");
    let shards: Vec<String> = checkpoint.files.keys().filter(|p| p.ends_with(".safetensors")).cloned().collect();
    for shard in &shards {
        stand_in.set_fault(&format!("org/model/{shard}"), Some(Fault::IgnoreRange));
    }
    let resolved = resolve_hub(&model("org/model"), &selection(), &environment).unwrap();
    assert!(matches!(resolved.origin, Origin::Store { fetched_now: true, .. }));
    let original = scratch.join("original");
    checkpoint.write_to(&original).unwrap();
    let expected: std::collections::BTreeMap<_, _> =
        tensors_in(&original).into_iter().filter(|(name, _)| selection().takes_tensor(name)).collect();
    assert_eq!(tensors_in(&resolved.dir), expected);
    // The whole shards are in the Hugging Face cache, each a link to its blob named by its
    // SHA-256, with no `.incomplete` file left.
    let snapshot = environment.hf_cache.join("models--org--model/snapshots").join(&commit);
    for shard in &shards {
        let link = snapshot.join(shard);
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&link).unwrap(), checkpoint.files[shard]);
    }
    let blobs: Vec<String> = std::fs::read_dir(environment.hf_cache.join("models--org--model/blobs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(blobs.len(), shards.len());
    assert!(blobs.iter().all(|b| b.len() == 64 && !b.contains("incomplete")), "{blobs:?}");
}

#[test]
fn a_header_that_does_not_parse_names_its_file() {
    let mut shard = String::new();
    let World { scratch: _scratch, checkpoint: _, stand_in: _stand_in, commit: _, environment } =
        World::edited("bad-header", |checkpoint| {
            shard = first_shard(checkpoint);
            checkpoint.files.get_mut(&shard).unwrap()[8] = b'[';
        });
    let error = resolve_hub(&model("org/model"), &selection(), &environment).unwrap_err();
    assert!(matches!(&error, Error::Malformed { what, .. } if *what == shard), "{error}");
    nothing_complete(&environment);
}

#[test]
fn no_network_is_its_own_error_and_a_stored_copy_still_serves() {
    let World { scratch: _scratch, checkpoint: _, stand_in: _stand_in, commit: _, mut environment } =
        World::new("no-network");
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let unreachable = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let mut down = environment.clone();
    down.endpoint = unreachable;
    let error = resolve_hub(&model("org/model"), &selection(), &down).unwrap_err();
    assert!(matches!(error, Error::Network { .. }), "{error}");
    assert!(error.to_string().contains("HF_HUB_OFFLINE"), "{error}");

    let fetched = resolve_hub(&model("org/model"), &selection(), &environment).unwrap();
    environment.endpoint = down.endpoint.clone();
    let resolved = resolve_hub(&model("org/model"), &selection(), &environment).unwrap();
    assert_eq!(resolved.dir, fetched.dir, "the ref recorded when online finds the stored commit");
}

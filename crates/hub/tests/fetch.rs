//! Fetching by name from the stand-in: only the vision bytes, stored so the next load needs no
//! network, and the Hugging Face cache used in place.

mod common;

use common::*;
use gemma_vision_hub::{Error, HfCache, MANIFEST_FILE, Origin, Store, resolve_hub};

#[test]
fn a_name_fetches_only_the_vision_bytes_and_the_store_holds_them_whole() {
    let World { scratch, checkpoint, stand_in, commit, environment } = World::new("only-vision");
    let selection = selection();

    let resolved = resolve_hub(&model("org/model"), &selection, &environment).unwrap();
    let Origin::Store { manifest, fetched_now: true, commit: found, .. } = &resolved.origin else {
        panic!("expected a fresh fetch, got {:?}", resolved.origin)
    };
    assert_eq!(found.as_str(), commit);
    assert_eq!(resolved.dir, environment.store.join("models--org--model/snapshots").join(&commit));

    let served = stand_in.served();
    let needed = needed_bytes(&checkpoint, &selection);
    assert_eq!(served.total_content_bytes(), needed, "exactly the configs, index, headers and vision tensors");
    assert_eq!(manifest.fetched_bytes, needed);
    assert_eq!(manifest.checkpoint_bytes, checkpoint.total_bytes());
    assert!(needed * 10 < checkpoint.total_bytes(), "{needed} of {}", checkpoint.total_bytes());
    assert_eq!(served.metadata_requests(), 1);
    // Each shard is resolved through the Hub once; its later ranges go to the content store.
    let resolved_shards =
        served.requests.iter().filter(|r| r.path.contains("/resolve/") && r.path.ends_with(".safetensors"));
    assert_eq!(resolved_shards.count(), 2);
    assert!(served.requests.iter().filter(|r| r.path.starts_with("/cdn/")).count() >= 6, "{:?}", served.requests);

    // The stored tensors are the checkpoint's vision tensors, byte for byte, and nothing else.
    let original = scratch.join("original");
    checkpoint.write_to(&original).unwrap();
    let expected: std::collections::BTreeMap<_, _> =
        tensors_in(&original).into_iter().filter(|(name, _)| selection.takes_tensor(name)).collect();
    assert_eq!(expected.len(), 6);
    assert_eq!(tensors_in(&resolved.dir), expected);
    assert_eq!(manifest.tensor_count(), 6);
    for file in ["config.json", "processor_config.json", gemma_vision_hub::INDEX_FILE] {
        assert_eq!(std::fs::read(resolved.dir.join(file)).unwrap(), checkpoint.files[file], "{file}");
    }
    assert!(!resolved.dir.join("tokenizer.json").exists());
    assert!(resolved.dir.join(MANIFEST_FILE).is_file());
    assert!(!environment.store.join("models--org--model/partial").join(&commit).exists());
}

#[test]
fn the_second_load_fetches_nothing_and_a_pinned_commit_asks_nothing() {
    let World { scratch: _scratch, checkpoint: _, stand_in, commit, environment } = World::new("second-load");
    let first = resolve_hub(&model("org/model"), &selection(), &environment).unwrap();
    stand_in.reset_served();

    let again = resolve_hub(&model("org/model"), &selection(), &environment).unwrap();
    assert_eq!(again.dir, first.dir);
    assert!(matches!(again.origin, Origin::Store { fetched_now: false, .. }));
    let served = stand_in.served();
    assert_eq!((served.metadata_requests(), served.content_requests()), (1, 0), "one metadata request for a branch");

    stand_in.reset_served();
    let pinned = resolve_hub(&model(&format!("org/model@{commit}")), &selection(), &environment).unwrap();
    assert_eq!(pinned.dir, first.dir);
    assert!(stand_in.served().requests.is_empty(), "{:?}", stand_in.served().requests);
}

#[test]
fn offline_uses_what_is_here_or_fails_clearly() {
    let World { scratch: _scratch, checkpoint: _, stand_in, commit, mut environment } = World::new("offline");
    environment.offline = true;
    let error = resolve_hub(&model("org/model"), &selection(), &environment).unwrap_err();
    assert!(matches!(error, Error::Offline { .. }), "{error}");
    assert!(error.to_string().contains("org/model@main") && error.to_string().contains("HF_HUB_OFFLINE"), "{error}");
    let error = resolve_hub(&model(&format!("org/model@{commit}")), &selection(), &environment).unwrap_err();
    assert!(matches!(error, Error::Offline { .. }), "{error}");
    assert!(stand_in.served().requests.is_empty());

    environment.offline = false;
    let fetched = resolve_hub(&model("org/model"), &selection(), &environment).unwrap();
    stand_in.reset_served();
    environment.offline = true;
    for name in ["org/model".to_owned(), format!("org/model@{commit}")] {
        let resolved = resolve_hub(&model(&name), &selection(), &environment).unwrap();
        assert_eq!(resolved.dir, fetched.dir);
    }
    assert!(stand_in.served().requests.is_empty());
}

#[test]
fn a_complete_hugging_face_snapshot_is_used_in_place() {
    let World { scratch: _scratch, checkpoint, stand_in, commit, environment } = World::new("hf-cache");
    // The layout huggingface_hub's snapshot_download leaves: blobs, links, refs/main.
    let repo_dir = environment.hf_cache.join("models--org--model");
    let snapshot = repo_dir.join("snapshots").join(&commit);
    std::fs::create_dir_all(repo_dir.join("blobs")).unwrap();
    std::fs::create_dir_all(&snapshot).unwrap();
    std::fs::create_dir_all(repo_dir.join("refs")).unwrap();
    std::fs::write(repo_dir.join("refs/main"), &commit).unwrap();
    for (i, (path, bytes)) in checkpoint.files.iter().enumerate() {
        let blob = format!("blob{i}");
        std::fs::write(repo_dir.join("blobs").join(&blob), bytes).unwrap();
        std::os::unix::fs::symlink(format!("../../blobs/{blob}"), snapshot.join(path)).unwrap();
    }
    let resolved = resolve_hub(&model("org/model"), &selection(), &environment).unwrap();
    assert!(matches!(resolved.origin, Origin::HfCache { .. }), "{:?}", resolved.origin);
    assert_eq!(resolved.dir, snapshot);
    assert_eq!(stand_in.served().content_requests(), 0);
    assert!(!environment.store.exists(), "nothing copied");

    stand_in.reset_served();
    let pinned = resolve_hub(&model(&format!("org/model@{commit}")), &selection(), &environment).unwrap();
    assert_eq!(pinned.dir, snapshot);
    assert!(stand_in.served().requests.is_empty());
    let mut offline = environment.clone();
    offline.offline = true;
    assert_eq!(resolve_hub(&model("org/model"), &selection(), &offline).unwrap().dir, snapshot);

    // A snapshot missing a shard its index names (an interrupted download) is not complete.
    let shard = checkpoint.files.keys().find(|p| p.ends_with("00002-of-00002.safetensors")).unwrap();
    std::fs::remove_file(snapshot.join(shard)).unwrap();
    assert!(
        HfCache::new(&environment.hf_cache)
            .complete_snapshot(&"org/model".parse().unwrap(), &commit.parse().unwrap(), &selection(), None)
            .is_none()
    );
    let resolved = resolve_hub(&model("org/model"), &selection(), &environment).unwrap();
    assert!(matches!(resolved.origin, Origin::Store { fetched_now: true, .. }), "{:?}", resolved.origin);
}

#[test]
fn two_loads_at_once_fetch_once() {
    let World { scratch: _scratch, checkpoint, stand_in, commit: _, environment } = World::new("concurrent");
    let dirs: Vec<_> = std::thread::scope(|scope| {
        let loads: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| resolve_hub(&model("org/model"), &selection(), &environment).unwrap()))
            .collect();
        loads.into_iter().map(|l| l.join().unwrap()).collect()
    });
    assert_eq!(dirs[0].dir, dirs[1].dir);
    let fresh = dirs.iter().filter(|d| matches!(d.origin, Origin::Store { fetched_now: true, .. })).count();
    let served = stand_in.served();
    // The second waits on the lock and finds the first's result (its `fetched_now` is then the
    // lock winner's report of a fresh fetch, or a completed store).
    assert!(fresh >= 1);
    assert_eq!(served.total_content_bytes(), needed_bytes(&checkpoint, &selection()));
    let expected = tensors_in(&dirs[0].dir);
    assert_eq!(expected.len(), 6);
}

#[test]
fn the_store_and_refs_are_keyed_by_commit() {
    let World { scratch: _scratch, checkpoint, stand_in, commit: first, environment } = World::new("new-commit");
    resolve_hub(&model("org/model"), &selection(), &environment).unwrap();
    let mut changed = checkpoint.clone();
    changed.files.insert("processor_config.json".into(), br#"{"image_processor": {"max_soft_tokens": 70}}"#.to_vec());
    let second = stand_in.host("org/model", "main", changed.hosted());
    assert_ne!(first, second);
    let resolved = resolve_hub(&model("org/model"), &selection(), &environment).unwrap();
    assert!(resolved.dir.ends_with(&second));
    let store = Store::new(&environment.store);
    assert_eq!(store.commit_of(&"org/model".parse().unwrap(), "main").unwrap().as_str(), second);
    assert!(store.complete(&"org/model".parse().unwrap(), &first.parse().unwrap()).is_some());
}

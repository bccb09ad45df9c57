//! Models named by Hub repository (the stand-in on 127.0.0.1 hosting seeded checkpoints: the
//! fixtures' tensors spread over shards beside language-model tensors): features identical to
//! the same files loaded from a directory, only the vision bytes fetched, and the second load
//! from what is on this machine.

extern crate gemma_vision_encoder as vision;

mod common;

use common::{bytes, fixture, image, temp_dir};
use hub::stand_in::{SeededCheckpoint, StandIn};
use vision::{EncoderOptions, HubEnvironment, ModelOrigin, VisionEncoder};

fn environment(root: &std::path::Path, stand_in: &StandIn, offline: bool) -> HubEnvironment {
    HubEnvironment {
        endpoint: stand_in.endpoint().to_owned(),
        hf_cache: root.join("hf/hub"),
        store: root.join("store"),
        token: None,
        offline,
        progress: false,
    }
}

fn options(environment: HubEnvironment) -> EncoderOptions {
    EncoderOptions { hub: Some(environment), ..EncoderOptions::default() }
}

#[test]
fn a_model_loaded_by_name_encodes_as_the_same_files_from_a_directory() {
    for case in ["tiny-clipped", "tiny-unified", "q-mxfp4"] {
        let scratch = temp_dir(&format!("by-name-{case}"));
        let checkpoint = SeededCheckpoint::from_model_dir(&fixture(case).join("model"), 2, 1 << 20, 3).unwrap();
        let stand_in = StandIn::start().unwrap();
        let commit = stand_in.host("org/tiny", "main", checkpoint.hosted());
        let by_name = VisionEncoder::load("org/tiny", options(environment(&scratch, &stand_in, false))).unwrap();
        let dir = scratch.join("directory");
        checkpoint.write_to(&dir).unwrap();
        let by_dir = VisionEncoder::load(&dir, EncoderOptions::default()).unwrap();

        let images = [image(case, "gradient-37x23.png"), image(case, "checker-20x30.png")];
        let named = by_name.encode_files(&images, None).unwrap();
        let local = by_dir.encode_files(&images, None).unwrap();
        assert_eq!(named.soft_tokens, local.soft_tokens, "{case}");
        assert_eq!(bytes(&named.features), bytes(&local.features), "{case}: bit for bit");
        assert_eq!(by_name.used_keys(), by_dir.used_keys(), "{case}");

        let served = stand_in.served().total_content_bytes();
        assert!(served * 4 < checkpoint.total_bytes(), "{case}: {served} of {} bytes", checkpoint.total_bytes());
        let inspection = vision::Inspection::of(&by_name, None, None).unwrap();
        let ModelOrigin::Fetched { repo, commit: found, fetched_bytes, checkpoint_bytes, .. } = inspection.origin
        else {
            panic!("{case}: {:?}", inspection.origin)
        };
        assert_eq!((repo.as_str(), found.as_str()), ("org/tiny", commit.as_str()));
        assert_eq!((fetched_bytes, checkpoint_bytes), (served, checkpoint.total_bytes()));
        assert_eq!(vision::Inspection::of(&by_dir, None, None).unwrap().origin, ModelOrigin::Directory);

        // The next load needs nothing but the branch's commit; offline, not even that.
        stand_in.reset_served();
        let again = VisionEncoder::load("org/tiny", options(environment(&scratch, &stand_in, true))).unwrap();
        assert!(stand_in.served().requests.is_empty());
        assert_eq!(bytes(&again.encode_files(&images, None).unwrap().features), bytes(&local.features));
    }
}

#[test]
fn a_name_that_the_hub_does_not_have_is_not_found() {
    let scratch = temp_dir("by-name-missing");
    let stand_in = StandIn::start().unwrap();
    let mut environment = environment(&scratch, &stand_in, false);
    environment.token = hub::Token::new("hf_x");
    let error = VisionEncoder::load("org/missing", options(environment)).unwrap_err();
    assert_eq!(error.kind(), vision::ErrorKind::NotFound, "{error}");
    assert!(error.to_string().contains("org/missing@main"), "{error}");
}
